// The report of bench/sync.mjs: the table of every tool's phases (time / requests / bytes sent),
// atlas's peak RSS beside its floor and the other tools' peaks, and the figures checked against
// issues 10, 20 and 36's targets. Prints only; bench/sync.mjs runs the tools and hands the results in.

const PHASES = ['first push', 'no-op push', 'push after 1% changed', 'pull into empty folder', 'no-op pull', 'pull of the older version'];

/**
 * Prints the report. `results` maps a tool to its phases' measures, `tools` the columns in order,
 * `floor` the peaks of bench/sync-floor.mjs, `resticBeside` the atlas column restic is compared
 * with. False (nothing printed past the table) when atlas has no results.
 */
export function printReport({ results, tools, floor, resticBeside, files: FILES, changedBytes }) {
  const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
  const secs = (ms) => `${(ms / 1000).toFixed(2)} s`;
  console.log('');
  const cell = (r) => (r ? `${secs(r.ms)} / ${r.requests} / ${mb(r.sent)}` : 'n/a');
  const width = (t) => Math.max(34, t.length + 26);
  console.log(['phase'.padEnd(27), ...tools.map((t) => `${t}: time / requests / sent`.padEnd(width(t)))].join(''));
  for (const phase of PHASES) console.log([phase.padEnd(27), ...tools.map((t) => cell(results[t][phase]).padEnd(width(t)))].join(''));
  const a = results.atlas;
  if (!a) return false;
  const verdict = (ok) => (ok ? 'ok' : 'MISSED');
  console.log('');
  console.log(`atlas peak RSS: ${PHASES.map((p) => `${p} ${(a[p].rss / 1e6).toFixed(0)} MB`).join(', ')}`);
  const maxRss = Math.max(...PHASES.map((p) => a[p].rss));
  // Issue 20's 1 KB per file, which the floor itself exceeds: issue 36 replaced it with the ratio to the floor below.
  console.log(`  = ${(maxRss / FILES / 1024).toFixed(1)} KB per file at most`);
  const perFile = (bytes) => `${(bytes / FILES / 1024).toFixed(2)} KB per file`;
  console.log(
    `floor (bench/sync-floor.mjs): Node.js alone ${(floor.node / 1e6).toFixed(0)} MB; atlas's sync push of a folder of 1 file ${(floor.atlas / 1e6).toFixed(0)} MB; ` +
      `the same I/O in a bare Node.js program, none of atlas: a push's reads, hashes and PUTs of packs, keeping only the paths, ${(floor.push / 1e6).toFixed(0)} MB (${perFile(floor.push)}); ` +
      `a pull's ranged GETs and files written, keeping nothing, ${(floor.pull / 1e6).toFixed(0)} MB (${perFile(floor.pull)})`,
  );
  // Issue 36: each phase's peak at most 1.3 times the floor under it (a push's I/O for the pushes, a pull's for the pulls).
  const floorOf = (p) => (p.includes('push') ? floor.push : floor.pull);
  const overFloor = PHASES.map((p) => a[p].rss / floorOf(p));
  console.log(
    `atlas peak RSS / its floor: ${PHASES.map((p, i) => `${p} ${overFloor[i].toFixed(2)}x`).join(', ')} (target <= 1.3x at 100,000 files${FILES >= 100_000 ? `: ${verdict(overFloor.every((x) => x <= 1.3))}` : '; run with 100000 to check it'})`,
  );
  // The others' peaks, for scale (a tool started through a wrapper script shows the wrapper's).
  for (const t of tools.filter((t) => t !== 'atlas')) {
    const measured = PHASES.filter((p) => results[t][p]);
    if (measured.length > 0)
      console.log(`${t} peak RSS: ${measured.map((p) => `${p} ${(results[t][p].rss / 1e6).toFixed(0)} MB`).join(', ')}`);
  }
  console.log('');
  const than = (tool, phase, target, mine = a) => {
    if (!results[tool]?.[phase] || !mine?.[phase]) return `${tool}: not measured`;
    const x = results[tool][phase].ms / mine[phase].ms;
    return `${x.toFixed(1)}x faster than ${tool} (target ${target === 1 ? 'faster' : `>= ${target}x`}: ${verdict(target === 1 ? x > 1 : x >= target)})`;
  };
  for (const phase of ['no-op push', 'no-op pull']) console.log(`atlas ${phase}: ${secs(a[phase].ms)}; ${than('rclone', phase, 3)}`);
  const push1 = a['push after 1% changed'];
  const oneTarget = FILES >= 100_000 ? 3 : 1;
  const resticTool = tools.find((t) => t.startsWith('restic')) ?? 'restic';
  const resticVs = resticBeside === 'atlas' ? '' : ` (${resticBeside}: ${secs(results[resticBeside]['push after 1% changed'].ms)})`;
  console.log(
    `atlas push after 1% changed: ${secs(push1.ms)}, ${push1.requests} requests; ${than('rclone', 'push after 1% changed', oneTarget)}; ${than(resticTool, 'push after 1% changed', 1, results[resticBeside])}${resticVs}`,
  );
  console.log(
    `  ${mb(push1.sent)} sent on the wire (HTTP included) for ${mb(changedBytes)} changed = ${(push1.sent / changedBytes).toFixed(2)}x (target <= 1.5x: ${verdict(push1.sent <= 1.5 * changedBytes)}); ` +
      `${mb(push1.payload)} of it file content`,
  );
  // Issue 36: every phase >= 1.0x restic on moto and >= 3x rclone, peak RSS <= rclone's.
  const speed = PHASES.slice(0, 5);
  const ratio = (tool, mine, phase) => (results[tool]?.[phase] && mine?.[phase] ? results[tool][phase].ms / mine[phase].ms : undefined);
  const line = (label, values, ok) =>
    console.log(
      `${label}: ${speed.map((p, i) => `${p} ${values[i] === undefined ? 'n/a' : `${values[i].toFixed(2)}x`}`).join(', ')} (${ok(values)})`,
    );
  const all = (target) => (values) =>
    values.some((v) => v === undefined)
      ? 'not measured'
      : `target >= ${target}x in every phase: ${verdict(values.every((v) => v >= target))}`;
  if (resticBeside !== 'atlas' || results[resticTool])
    line(
      `atlas against ${resticTool} (its time / atlas's)`,
      speed.map((p) => ratio(resticTool, results[resticBeside], p)),
      all(1),
    );
  line(
    "atlas against rclone (its time / atlas's)",
    speed.map((p) => ratio('rclone', a, p)),
    all(3),
  );
  const rss = speed.map((p) => (results.rclone?.[p] ? results.rclone[p].rss / a[p].rss : undefined));
  line("peak RSS, rclone's / atlas's", rss, (values) =>
    values.some((v) => v === undefined) ? 'not measured' : `target atlas <= rclone in every phase: ${verdict(values.every((v) => v >= 1))}`,
  );
  return true;
}

// `npm test`: the linter and the type check run beside the build and the tests instead of before
// them. The suite leaves about a quarter of two cores idle while its tests wait on real processes
// and servers, and the checks (~15 s of CPU) fit there. A failed check still fails fast: its
// output is printed and the tests are stopped. Extra arguments go to vitest.
import { spawn } from 'node:child_process';

// Each tool's own entry under Node (no npx in between), so that stopping the tests stops vitest itself.
const node = process.execPath;
const LINTED = ['src', 'test', 'bench', 'scripts', 'bin', 'biome.jsonc'];
const checks = [
  // The folders biome.jsonc includes, named: given `.`, biome walks the whole tree, dist/ too, which
  // the build beside it deletes and writes again (a run failed with ENOENT on dist/).
  { name: 'lint (biome check)', args: ['node_modules/@biomejs/biome/bin/biome', 'check', '--error-on-warnings', ...LINTED] },
  { name: 'typecheck (tsc)', args: ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit'] },
];

// NODE_EXTRA_CA_CERTS makes every Node.js process read and parse its certificates as it starts
// (Node 20 does not wait for a first TLS connection): with a system bundle of ~140 that is ~22 ms
// and ~2 MB more per process, and the suite starts about 2,000. Its processes reach only servers
// the tests start on 127.0.0.1, over plain HTTP, so they run without it.
const env = { ...process.env };
delete env.NODE_EXTRA_CA_CERTS;

/** Runs a command; `quiet` keeps its output for the end (two checks' lines never interleave with the tests'). */
function run(command, args, quiet) {
  const child = spawn(command, args, { env, stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  const output = [];
  if (quiet) for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk) => output.push(chunk));
  const done = new Promise((resolve) => {
    child.on('error', (error) => resolve({ code: 127, output: `${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output: Buffer.concat(output).toString() }));
  });
  return { child, done };
}

const running = new Set();
let failed = false;
const checked = checks.map(({ name, args }) => {
  const check = run(node, args, true);
  running.add(check.child);
  return check.done.then(({ code, output }) => {
    running.delete(check.child);
    // A check stopped here because the other failed has nothing to say.
    if (code === 0 || check.child.killed) return;
    process.stderr.write(`\n${output}\nnpm test: ${name} failed (exit ${code})${failed ? '' : '; the tests are stopped'}\n`);
    failed = true;
    for (const child of running) child.kill('SIGTERM');
  });
});

const build = await run(node, ['scripts/build.mjs'], false).done;
let testCode = build.code;
if (build.code === 0 && !failed) {
  const vitest = run(node, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], false);
  running.add(vitest.child);
  testCode = (await vitest.done).code;
}
await Promise.all(checked);
process.exit(failed ? 1 : testCode);

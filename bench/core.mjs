// Targets (issues 2 and 35): `atlas hook status` ≤ 1.3× `node -e 0`; `atlas checkpoint` on a hook
// with 10,000 history events and 50 checkpoints ≤ 150 ms wall. CI's coarser gate on the same
// commands: scripts/speed-gate.mjs.
import { ATLAS, makeRepo, report, tempDir, timeCommands, writeFixtureTask } from './lib.mjs';

const home = tempDir('atlas-bench-home-');
const repo = makeRepo();
const bigRepo = makeRepo();
const small = writeFixtureTask(home, repo, { events: 40, checkpoints: 5, id: 'task-20260101-110000' });
const big = writeFixtureTask(home, bigRepo, { events: 10_000, checkpoints: 50, id: 'task-20260101-120000', workspace: 'bench-big' });
const env = { ATLAS_HOME: home };
const node = process.execPath;

console.log('atlas core bench (wall time of whole commands, 30 interleaved runs)');
const rows = timeCommands([
  { label: 'node -e 0', argv: [node, '-e', '0'] },
  { label: "atlas hook status (in the task's tree)", argv: [node, ATLAS, 'hook', 'status'], cwd: repo, env },
  { label: 'atlas hook status --task ID', argv: [node, ATLAS, 'hook', 'status', '--task', small.id], env },
  { label: 'atlas checkpoint (10,000 events, 50 ckpts)', argv: [node, ATLAS, 'checkpoint', 'bench', '--task', big.id], env },
]);
report(rows);
const [base, statusCwd, status, checkpoint] = rows;
const ratio = statusCwd.median / base.median;
console.log(`  hook status / node -e 0: ${ratio.toFixed(2)}×  (target ≤ 1.3×) ${ratio <= 1.3 ? 'MET' : 'NOT MET'}`);
console.log(`  hook status --task / node -e 0: ${(status.median / base.median).toFixed(2)}×`);
console.log(
  `  checkpoint on 10,000-event hook: ${checkpoint.median.toFixed(1)} ms, ${(checkpoint.median / base.median).toFixed(2)}× node -e 0  (target ≤ 150 ms) ${checkpoint.median <= 150 ? 'MET' : 'NOT MET'}`,
);

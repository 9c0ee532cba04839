// What bringing a sandboxed task's commits across the wall costs (issue 34: at most 100 ms for a
// task of 50 changed files). In a repository of 2,000 files with a linked worktree, a "step"
// changes 50 files and commits them into the task's own object store (as a sandboxed step does,
// GIT_OBJECT_DIRECTORY over the repository's objects); then atlas's crossing (dist/git/
// cross-objects.ts: pack-objects in the task's store, index-pack --strict in the repository) is
// timed, beside the step's own `git add -A && git commit` as the reference, interleaved.
// Also timed: the control review's inspection of the same task (src/git/control-changes.ts).
// Usage: node bench/crossing.mjs   (RUNS=20 to change the number of runs)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, importBundle, makeRepo, ROOT, tempDir } from './lib.mjs';

const RUNS = Number(process.env.RUNS ?? 15);
const FILES = 2000;
const CHANGED = 50;
const TARGET_MS = 100;

const work = tempDir('atlas-bench-cross-lib-');
const entry = join(work, 'entry.ts');
const src = (file) => JSON.stringify(join(ROOT, 'src', file));
writeFileSync(
  entry,
  `export { crossTaskObjects } from ${src('git/cross-objects.ts')};\nexport { controlChanges } from ${src('git/control-changes.ts')};\nexport * from ${src('git/task-objects.ts')};\n`,
);
const { crossTaskObjects, controlChanges, ensureObjectDir, overlayEnv, stepObjectDir } = await importBundle(join(work, 'lib.mjs'), {
  entryPoints: [entry],
});

const repo = makeRepo();
for (let i = 0; i < FILES; i++) {
  mkdirSync(join(repo, 'src', `m${i % 40}`), { recursive: true });
  writeFileSync(join(repo, 'src', `m${i % 40}`, `f${i}.js`), `export const v${i} = ${i};\n`.repeat(20));
}
git(repo, 'add', '-A');
git(repo, 'commit', '-q', '-m', 'files');
git(repo, 'gc', '-q');
const base = git(repo, 'rev-parse', 'HEAD');
const worktree = join(tempDir('atlas-bench-cross-'), 'tree');
git(repo, 'worktree', 'add', '-q', '-b', 'atlas/bench', worktree, base);
const taskDir = tempDir('atlas-bench-cross-task-');
const store = ensureObjectDir(stepObjectDir(taskDir));
const stepEnv = { ...process.env, ...overlayEnv(join(repo, '.git'), store) };

function step(run) {
  for (let i = 0; i < CHANGED; i++) {
    const n = (run * CHANGED + i) % FILES;
    writeFileSync(join(worktree, 'src', `m${n % 40}`, `f${n}.js`), `export const v${n} = ${run};\n`.repeat(20));
  }
  const t = performance.now();
  execFileSync('git', ['add', '-A'], { cwd: worktree, env: stepEnv });
  execFileSync('git', ['commit', '-q', '-m', `step ${run}`], { cwd: worktree, env: stepEnv });
  return performance.now() - t;
}

const commits = [];
const crossings = [];
const reviews = [];
let objects = 0;
for (let run = 0; run < RUNS + 2; run++) {
  const c = step(run);
  let t = performance.now();
  const result = await crossTaskObjects({ worktree, taskDir, branch: 'atlas/bench', base });
  const x = performance.now() - t;
  t = performance.now();
  await controlChanges(worktree, base, git(worktree, 'rev-parse', 'HEAD'));
  const r = performance.now() - t;
  if (run < 2) continue; // warm-up
  commits.push(c);
  crossings.push(x);
  reviews.push(r);
  objects = result.objects;
}
git(repo, 'fsck', '--strict', '--no-dangling');

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], p90: s[Math.floor(s.length * 0.9)], min: s[0] };
};
const line = (label, xs) => {
  const s = stats(xs);
  console.log(
    `  ${label.padEnd(52)} median ${s.median.toFixed(1).padStart(6)} ms   p90 ${s.p90.toFixed(1).padStart(6)} ms   min ${s.min.toFixed(1).padStart(6)} ms`,
  );
  return s;
};
console.log(
  `  repository of ${FILES} files; each step changes ${CHANGED} and commits them (${objects} objects cross per step), ${RUNS} runs interleaved`,
);
line("reference: the step's own git add -A && git commit", commits);
const crossing = line('crossing (pack-objects | index-pack --strict)', crossings);
line('control review of the task (not in the target)', reviews);
console.log(
  `  target: crossing <= ${TARGET_MS} ms for ${CHANGED} changed files: median ${crossing.median.toFixed(1)} ms, p90 ${crossing.p90.toFixed(1)} ms — ${crossing.median <= TARGET_MS ? 'met' : 'NOT met'}`,
);

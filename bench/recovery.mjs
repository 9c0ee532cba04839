// Figures for recovery's hot paths: crash detection over many tasks (what `atlas status` and
// `atlas start` pay) and saving work before a reset on a repository with many files.
// Usage: node bench/recovery.mjs [tasks=200] [files=5000]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importBundle } from './lib.mjs';

const tasks = Number(process.argv[2] ?? 200);
const files = Number(process.argv[3] ?? 5000);
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-recovery-'));
process.env.ATLAS_HOME = join(work, 'home');

const entry = join(work, 'entry.ts');
const src = new URL('../src/', import.meta.url).pathname;
writeFileSync(
  entry,
  `export { findCrashedTasks } from ${JSON.stringify(join(src, 'recovery/detect.ts'))};\n` +
    `export { saveWork } from ${JSON.stringify(join(src, 'recovery/save-work.ts'))};\n` +
    `export { claimTaskDir, writeTask } from ${JSON.stringify(join(src, 'store/task-store.ts'))};\n` +
    `export { HookManager } from ${JSON.stringify(join(src, 'hook/manager.ts'))};\n` +
    `export { newHook, transition } from ${JSON.stringify(join(src, 'domain/hook.ts'))};\n` +
    `export { writeOwner } from ${JSON.stringify(join(src, 'liveness/owner.ts'))};\n`,
);
const lib = await importBundle(
  join(work, 'lib.mjs'),
  {
    entryPoints: [entry],
  },
  { require: true },
);

const git = (cwd, ...args) => execFileSync('git', args, { cwd, encoding: 'utf8' });
const repo = join(work, 'repo');
mkdirSync(repo);
git(repo, 'init', '-q');
git(repo, 'config', 'user.name', 'bench');
git(repo, 'config', 'user.email', 'bench@example.com');
for (let i = 0; i < files; i++) {
  const dir = join(repo, `d${i % 50}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`.repeat(20));
}
git(repo, 'add', '-A');
git(repo, 'commit', '-q', '-m', 'base');

// Tasks: a third crashed (dead pid), a third with a live owner (this process), a third completed.
const old = new Date(Date.now() - 3600_000);
for (let i = 0; i < tasks; i++) {
  const ref = lib.claimTaskDir(`ws${i % 10}`, old, process.env.ATLAS_HOME);
  const ts = old.toISOString().replace(/\.\d{3}Z$/, 'Z');
  lib.writeTask(ref.dir, {
    schema_version: '1.0',
    id: ref.id,
    workspace_id: ref.workspace,
    template: 't',
    description: 'd',
    created_at: ts,
    updated_at: ts,
    status: 'step_running',
    repo_root: repo,
    worktree: repo,
    in_place: true,
    branch: 'main',
    steps: [],
  });
  const m = new lib.HookManager(ref, { maxCheckpoints: 50 });
  let h = lib.transition(lib.newHook(ref.id, ref.workspace, ts), { to: 'step_pending', trigger: 'setup_complete', at: ts });
  if (i % 3 === 2) h = lib.transition(h, { to: 'completed', trigger: 'task_complete', at: ts });
  await m.create(h);
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (i % 3 === 0)
    lib.writeOwner(join(ref.dir, 'owner.json'), {
      pid: 2 ** 22 - 1,
      host: (await import('node:os')).hostname(),
      process_start: 'x',
      started_at: now,
      heartbeat_at: now,
      heartbeat_interval_ms: 10000,
      stale_threshold_ms: 300000,
    });
  if (i % 3 === 1)
    lib.writeOwner(join(ref.dir, 'owner.json'), {
      pid: process.pid,
      host: (await import('node:os')).hostname(),
      process_start: 'unknown',
      started_at: now,
      heartbeat_at: now,
      heartbeat_interval_ms: 10000,
      stale_threshold_ms: 300000,
    });
}

function time(label, fn, runs) {
  const ms = [];
  let out;
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    out = fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${label}: median ${ms[Math.floor(runs / 2)].toFixed(1)} ms (min ${ms[0].toFixed(1)}, max ${ms[runs - 1].toFixed(1)}, ${runs} runs)`,
  );
  return out;
}

const crashed = time(`findCrashedTasks over ${tasks} tasks`, () => lib.findCrashedTasks({ home: process.env.ATLAS_HOME }), 10);
console.log(`  crashed found: ${crashed.length} (expected ${Math.ceil(tasks / 3)})`);

// Save work: 1% of files modified, 20 untracked files.
for (let i = 0; i < files; i += 100) writeFileSync(join(repo, `d${i % 50}`, `f${i}.txt`), 'changed\n');
for (let i = 0; i < 20; i++) writeFileSync(join(repo, `new-${i}.txt`), 'new\n');
const ms = [];
for (let r = 0; r < 5; r++) {
  const t = performance.now();
  const saved = await lib.saveWork({ worktree: repo, taskId: 'task-20260101-000000', now: new Date(Date.now() + r * 1000) });
  ms.push(performance.now() - t);
  if (!saved.saved) throw new Error('nothing saved');
}
ms.sort((a, b) => a - b);
console.log(
  `saveWork, ${files} files, ${files / 100 + 20} changed: median ${ms[2].toFixed(1)} ms (min ${ms[0].toFixed(1)}, max ${ms[4].toFixed(1)}, 5 runs)`,
);
rmSync(work, { recursive: true, force: true });

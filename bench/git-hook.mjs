// How much atlas's post-commit hook adds to `git commit` (target: at most 150 ms).
// In temp repositories, each with a running atlas task in a linked worktree, times `git commit`
// without atlas's hooks, with them in the default background mode, with ATLAS_HOOK_SYNC=1, and
// (with hooks) in a repository no task owns. Runs are interleaved so drift hits all alike.
// Usage: npm run bench:git-hook   (RUNS=40 to change the number of runs per case)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNS = Number(process.env.RUNS ?? 30);
const WARMUP = 3;
const ATLAS_BIN = fileURLToPath(new URL('../bin/atlas.cjs', import.meta.url));
const root = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-bench-git-hook-')));
const home = join(root, 'home');

const baseEnv = {
  ...process.env,
  ATLAS_HOME: home,
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};
for (const key of Object.keys(baseEnv)) if (key.startsWith('ATLAS_HOOK_')) delete baseEnv[key];

const git = (cwd, ...args) => execFileSync('git', args, { cwd, env: baseEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const stamp = (d = new Date()) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

function makeRepo(name) {
  const dir = join(root, name);
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'commit.gpgsign', 'false');
  writeFileSync(join(dir, 'README.md'), '# bench\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

let taskSeq = 0;
/** A running task (task.json + hook.json as the runner writes them) in a new linked worktree. */
function makeTask(repo, name) {
  const id = `task-20260101-0000${String(++taskSeq).padStart(2, '0')}`;
  const dir = join(home, 'workspaces', name, 'tasks', id);
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  const worktree = join(root, `${name}-tree`);
  const branch = `bench/${name}`;
  git(repo, 'worktree', 'add', '-q', '-b', branch, worktree);
  const at = stamp();
  const steps = [{ name: 'implement', type: 'ai', prompt: 'x', max_attempts: 3, on_failure: 'fail' }];
  const task = {
    schema_version: '1.0',
    id,
    workspace_id: name,
    template: 'bench',
    description: 'bench',
    created_at: at,
    updated_at: at,
    status: 'step_running',
    repo_root: repo,
    worktree,
    in_place: false,
    branch,
    steps,
  };
  const hook = {
    version: '1.0',
    task_id: id,
    workspace_id: name,
    created_at: at,
    updated_at: at,
    state: 'step_running',
    current_step: { step_name: 'implement', step_index: 0, started_at: at, attempt: 1, max_attempts: 3 },
    history: [
      { timestamp: at, from_state: '', to_state: 'initializing', trigger: 'task_start' },
      { timestamp: at, from_state: 'initializing', to_state: 'step_pending', trigger: 'setup_complete' },
      {
        timestamp: at,
        from_state: 'step_pending',
        to_state: 'step_running',
        trigger: 'step_start',
        step_name: 'implement',
        details: { step_index: 0 },
      },
    ],
    checkpoints: [],
    receipts: [],
    schema_version: '1.0',
  };
  writeFileSync(join(dir, 'task.json'), `${JSON.stringify(task, null, 2)}\n`);
  writeFileSync(join(dir, 'hook.json'), `${JSON.stringify(hook, null, 2)}\n`);
  return { worktree, hookPath: join(dir, 'hook.json') };
}

/** Commits the task's checkpoints record (at most hooks.max_checkpoints are kept). */
const recordedCommits = (t) => JSON.parse(readFileSync(t.hookPath, 'utf8')).checkpoints.map((c) => c.git_commit);

let fileSeq = 0;
/** One timed `git commit` of a fresh change (staging is not timed). */
function timedCommit(cwd, env) {
  writeFileSync(join(cwd, `f${++fileSeq % 8}.txt`), `${fileSeq}\n`);
  git(cwd, 'add', '-A');
  const start = process.hrtime.bigint();
  const r = spawnSync('git', ['commit', '-q', '-m', `change ${fileSeq}`], { cwd, env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`git commit failed: ${r.stderr}`);
  return ms;
}

async function waitForCheckpointOf(t, sha) {
  const deadline = Date.now() + 30_000;
  while (!recordedCommits(t).includes(sha)) {
    if (Date.now() > deadline) throw new Error('background checkpoint did not arrive');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))];

try {
  const plainRepo = makeRepo('plain');
  const plain = makeTask(plainRepo, 'plain');
  const hookedRepo = makeRepo('hooked');
  const hooked = makeTask(hookedRepo, 'hooked');
  const noTaskRepo = makeRepo('no-task');
  for (const repo of [hookedRepo, noTaskRepo]) {
    const r = spawnSync(process.execPath, [ATLAS_BIN, 'hook', 'install', '--repo', repo], { env: baseEnv, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`atlas hook install failed: ${r.stderr}`);
  }

  const cases = {
    'no atlas hook': { times: [], run: () => timedCommit(plain.worktree, baseEnv) },
    'atlas hook, background (default)': {
      times: [],
      run: async () => {
        const ms = timedCommit(hooked.worktree, baseEnv);
        // Not timed (the commit has returned): keeps background work from overlapping the next run.
        await waitForCheckpointOf(hooked, git(hooked.worktree, 'rev-parse', 'HEAD'));
        return ms;
      },
    },
    'atlas hook, ATLAS_HOOK_SYNC=1': {
      times: [],
      run: () => {
        const ms = timedCommit(hooked.worktree, { ...baseEnv, ATLAS_HOOK_SYNC: '1' });
        if (!recordedCommits(hooked).includes(git(hooked.worktree, 'rev-parse', 'HEAD')))
          throw new Error('sync hook did not record a checkpoint');
        return ms;
      },
    },
    'atlas hook, ATLAS_HOOK_SYNC=1, no task here': { times: [], run: () => timedCommit(noTaskRepo, { ...baseEnv, ATLAS_HOOK_SYNC: '1' }) },
  };

  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const c of Object.values(cases)) {
      const ms = await c.run();
      if (i >= WARMUP) c.times.push(ms);
    }
  }

  const baseline = median(cases['no atlas hook'].times);
  console.log(`git commit, ${RUNS} runs per case (after ${WARMUP} warm-up), node ${process.version}`);
  console.log('case'.padEnd(46), 'median'.padStart(9), 'p90'.padStart(9), 'added'.padStart(9));
  for (const [name, c] of Object.entries(cases)) {
    const m = median(c.times);
    const added = name === 'no atlas hook' ? '' : `${(m - baseline).toFixed(1)} ms`;
    console.log(name.padEnd(46), `${m.toFixed(1)} ms`.padStart(9), `${p90(c.times).toFixed(1)} ms`.padStart(9), added.padStart(9));
  }
  const addedDefault = median(cases['atlas hook, background (default)'].times) - baseline;
  console.log(
    `target: the post-commit hook adds <= 150 ms in the default mode: ${addedDefault <= 150 ? 'met' : 'NOT met'} (${addedDefault.toFixed(1)} ms)`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}

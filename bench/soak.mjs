// Soak: N SIGKILLs at random moments across whole task runs (atlas start, and sometimes the
// `atlas recover` that follows), each followed by `atlas recover`, until every task completes.
// After every kill: hook.json must parse, its history must keep every event seen before the kill,
// and no file the working tree held may be lost (it stays in the tree or on the branch recovery
// saved it on). Prints the figures; exits 1 if any target is missed.
//
// Usage: node bench/soak.mjs [--kills N] [--jobs J] [--seed S] [--keep]   (env: SOAK_KILLS, SOAK_JOBS, SOAK_SEED)
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ATLAS, git, importBundle, makeRepo, ROOT, seededRandom, tempDir } from './lib.mjs';

function flag(name, env, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1] !== undefined) return Number(process.argv[i + 1]);
  if (process.env[env] !== undefined) return Number(process.env[env]);
  return fallback;
}

const KILLS = flag('kills', 'SOAK_KILLS', 200);
const JOBS = flag('jobs', 'SOAK_JOBS', 2);
const SEED = flag('seed', 'SOAK_SEED', Date.now() % 1_000_000);
const KEEP = process.argv.includes('--keep');
const random = seededRandom(SEED);

// parseHook exactly as atlas validates hook.json.
const work = tempDir('atlas-soak-');
const entry = join(work, 'entry.ts');
writeFileSync(entry, `export { parseHook } from ${JSON.stringify(join(ROOT, 'src', 'domain', 'hook-schema.ts'))};\n`);
const { parseHook } = await importBundle(join(work, 'lib.mjs'), {
  entryPoints: [entry],
});

// Every step writes a known file under out/. prepare, validate and after are safe to rerun
// (idempotent); build appends to a log and stage commits and records a checkpoint mid-step, so a
// crash there is diagnosed `manual` or `retry_from_checkpoint`. Every step is safe to rerun in this
// synthetic template, so a `manual` verdict is answered with --action retry_step. max_attempts is
// generous: each crash retry uses an attempt.
const TEMPLATE = `name: soak
branch_prefix: soak/
steps:
  - name: prepare
    type: command
    idempotent: true
    max_attempts: 100
    run: "mkdir -p out && sleep 0.15 && echo prepare > out/prepare.txt"
  - name: build
    type: command
    max_attempts: 100
    run: "mkdir -p out && echo build >> out/build.log && sleep 0.15 && echo build > out/build.txt"
  - name: stage
    type: command
    max_attempts: 100
    run:
      - "mkdir -p out && echo stage1 > out/stage1.txt && git add -A && (git diff --cached --quiet || git commit -q -m stage1)"
      - "node \\"$SOAK_ATLAS\\" checkpoint 'stage 1 committed' --task \\"$ATLAS_TASK_ID\\" --quiet"
      - "sleep 0.15 && echo stage2 > out/stage2.txt"
  - name: validate
    type: validation
    max_attempts: 100
    commands: ["sleep 0.15 && test -f out/prepare.txt && test -f out/build.txt && test -f out/stage1.txt"]
  - name: commit
    type: git
    action: commit
    max_attempts: 100
  - name: after
    type: command
    idempotent: true
    max_attempts: 100
    run: "mkdir -p out && sleep 0.1 && echo after > out/after.txt"
  - name: commit-after
    type: git
    action: commit
    max_attempts: 100
`;
const STEP_FILES = ['out/prepare.txt', 'out/build.txt', 'out/build.log', 'out/stage1.txt', 'out/stage2.txt', 'out/after.txt'];

const home = join(work, 'home');
mkdirSync(home);
const env = { ...process.env };
for (const key of Object.keys(env)) if (key.startsWith('ATLAS_')) delete env[key];
Object.assign(env, { ATLAS_HOME: home, SOAK_ATLAS: ATLAS, NO_COLOR: '1' });

const stats = {
  kills: 0,
  killsOfRecovery: 0,
  recoveries: 0,
  tasks: 0,
  completed: 0,
  unparseable: 0,
  historyLosses: 0,
  lostFiles: 0,
  notCompleted: 0,
  killedBeforeTask: 0,
  killedAt: {},
  actions: {},
  problems: [],
};
let killsLeft = KILLS;

function takeKill() {
  if (killsLeft <= 0) return false;
  killsLeft--;
  return true;
}

function runAtlas(args, cwd) {
  const child = spawn(process.execPath, [ATLAS, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

function taskDirOf(workspace) {
  const tasks = join(home, 'workspaces', workspace, 'tasks');
  if (!existsSync(tasks)) return undefined;
  const ids = readdirSync(tasks);
  return ids.length > 0 ? join(tasks, ids[0]) : undefined;
}

function readHookRaw(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, 'hook.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

function treeFiles(root) {
  const files = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name === '.git') continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) files.push(relative(root, path));
    }
  };
  walk(root);
  return files;
}

function sameEvent(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// How long whole runs take when nobody kills them, so kill moments spread over the whole run.
const durations = { start: [2500], recover: [2000] };
function typical(kind) {
  const d = [...durations[kind]].sort((a, b) => a - b);
  return d[Math.floor(d.length * 0.75)];
}

/** Runs one atlas process; kills it at a random moment if `kill`; returns what happened. */
async function runMaybeKilled(args, cwd, dir, kill, kind) {
  const t0 = Date.now();
  const { child, done } = runAtlas(args, cwd);
  void done.then((r) => {
    if (r.signal === null && r.code === 0) durations[kind].push(Date.now() - t0);
  });
  if (!kill) return { killed: false, result: await done };
  const delay = Math.floor(random() * typical(kind));
  let exited = false;
  void done.then(() => (exited = true));
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, delay))]);
  if (exited) {
    killsLeft++; // the process finished first: this kill did not happen
    return { killed: false, result: await done };
  }
  const taskDir = dir();
  const before = taskDir ? readHookRaw(taskDir) : undefined;
  child.kill('SIGKILL');
  const result = await done;
  return { killed: true, result, before, taskDir: dir() };
}

function checkAfterKill(state, before, taskDir, label) {
  stats.kills++;
  const raw = readHookRaw(taskDir);
  let hook;
  try {
    hook = parseHook(raw);
  } catch (error) {
    stats.unparseable++;
    stats.problems.push(`${label}: hook.json does not parse after a kill: ${error.message}`);
    return undefined;
  }
  stats.killedAt[hook.state] = (stats.killedAt[hook.state] ?? 0) + 1;
  // Every event seen before the kill (read just before it, and after the previous one) is still there, in order.
  for (const seen of [state.lastHistory, before?.history].filter(Boolean)) {
    const kept = seen.length <= hook.history.length && seen.every((e, i) => sameEvent(e, hook.history[i]));
    if (!kept) {
      stats.historyLosses++;
      stats.problems.push(`${label}: history lost events (had ${seen.length}, now ${hook.history.length})`);
    }
  }
  state.lastHistory = hook.history;
  for (const f of treeFiles(state.worktree)) state.seenFiles.add(f);
  return hook;
}

function recoveryBranches(worktree, taskId) {
  try {
    return git(worktree, 'for-each-ref', '--format=%(refname:short)', `refs/heads/atlas/recovery/${taskId}/`).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function onBranch(worktree, branch, path) {
  try {
    execFileSync('git', ['cat-file', '-e', `${branch}:${path}`], { cwd: worktree, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** One task from `atlas start` to completed, with kills along the way. */
async function soakTask(lane, repo, n) {
  const workspace = `soak-${lane}-${n}`;
  const label = workspace;
  stats.tasks++;
  const dir = () => taskDirOf(workspace);
  const state = { lastHistory: undefined, seenFiles: new Set(), worktree: join(home, 'workspaces', workspace, 'worktree') };

  const start = await runMaybeKilled(
    ['start', 'soak', `soak task ${n}`, '--workspace', workspace, '--no-interactive'],
    repo,
    dir,
    takeKill(),
    'start',
  );
  const taskDir = dir();
  if (start.killed && (!taskDir || !existsSync(join(taskDir, 'task.json')))) {
    // Killed before task.json was written: there is no task to recover (nothing ran). Reported,
    // but not counted among the N kills, which are all kills of a task.
    killsLeft++;
    stats.killedBeforeTask++;
    stats.tasks--;
    return;
  }
  if (!taskDir) {
    stats.notCompleted++;
    stats.problems.push(
      `${label}: atlas start made no task (exit ${start.result.code}): ${start.result.stderr.trim().split('\n').slice(-2).join(' | ')}`,
    );
    return;
  }
  if (start.killed && !existsSync(join(taskDir, 'hook.json'))) {
    // Killed between task.json and hook.json: recovery writes the hook `atlas start` would have.
    stats.kills++;
    stats.killedAt['before hook.json'] = (stats.killedAt['before hook.json'] ?? 0) + 1;
  } else if (start.killed) checkAfterKill(state, start.before, taskDir, label);
  else if (start.result.code !== 0)
    stats.problems.push(
      `${label}: atlas start exited ${start.result.code}: ${start.result.stderr.trim().split('\n').slice(-2).join(' | ')}`,
    );

  const taskId = JSON.parse(readFileSync(join(taskDir, 'task.json'), 'utf8')).id;
  let action = ['--yes'];
  let stuck = 0;
  for (;;) {
    const hook = readHookRaw(taskDir);
    if (hook?.state === 'completed') break;
    if (hook && (hook.state === 'failed' || hook.state === 'abandoned')) {
      stats.notCompleted++;
      stats.problems.push(`${label}: the task ended ${hook.state}: ${JSON.stringify(hook.history.at(-1))}`);
      return;
    }
    if (stuck >= 8) {
      stats.notCompleted++;
      stats.problems.push(`${label}: could not be brought to completion (hook in ${hook?.state})`);
      return;
    }
    // Kill the recovery too, sometimes.
    const kill = random() < 0.35 && takeKill();
    stats.recoveries++;
    const rec = await runMaybeKilled(['recover', '--task', taskId, ...action, '--json'], repo, dir, kill, 'recover');
    if (rec.killed) {
      stats.killsOfRecovery++;
      checkAfterKill(state, rec.before, taskDir, `${label} (recovery)`);
      action = ['--yes'];
      continue;
    }
    const out = parseJson(rec.result.stdout);
    const chosen = out?.action ? `${out.action}${out.entry?.kind === 'continue' ? ' (continue)' : ''}` : undefined;
    if (chosen) stats.actions[chosen] = (stats.actions[chosen] ?? 0) + 1;
    if (rec.result.code === 0) {
      action = ['--yes'];
      stuck = 0;
      continue;
    }
    if (rec.result.code === 5 && out?.action === 'manual') {
      // Every step of this template is safe to run again: answer the manual verdict with a retry.
      action = ['--action', 'retry_step'];
      continue;
    }
    stuck++;
    const why = out?.error?.message ?? (rec.result.stderr.trim().split('\n').slice(-2).join(' | ') || `exit ${rec.result.code}`);
    if (stuck === 1 || stuck >= 8) stats.problems.push(`${label}: atlas recover exited ${rec.result.code}: ${why}`);
    // e.g. a hook without owner.json younger than the grace: wait and try again.
    await new Promise((resolve) => setTimeout(resolve, 1500));
  }

  stats.completed++;
  const final = parseHook(readHookRaw(taskDir));
  if (state.lastHistory && !state.lastHistory.every((e, i) => sameEvent(e, final.history[i]))) {
    stats.historyLosses++;
    stats.problems.push(`${label}: history lost events by the end`);
  }
  const now = new Set(treeFiles(state.worktree));
  const branches = recoveryBranches(state.worktree, taskId);
  for (const f of new Set([...state.seenFiles, ...STEP_FILES])) {
    if (now.has(f) || branches.some((b) => onBranch(state.worktree, b, f))) continue;
    stats.lostFiles++;
    stats.problems.push(`${label}: ${f} is lost (not in the tree, not on ${branches.join(', ') || 'any recovery branch'})`);
  }
}

async function lane(index) {
  const repo = makeRepo();
  mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
  writeFileSync(join(repo, '.atlas', 'templates', 'soak.yaml'), TEMPLATE);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'soak template');
  let n = 0;
  while (killsLeft > 0) await soakTask(index, repo, n++);
  return repo;
}

const started = Date.now();
const progress = setInterval(
  () => process.stderr.write(`soak: ${stats.kills}/${KILLS} kills, ${stats.completed} tasks completed\n`),
  15_000,
);
const repos = await Promise.all(Array.from({ length: JOBS }, (_, i) => lane(i)));
clearInterval(progress);
const wall = (Date.now() - started) / 1000;

console.log(`soak (seed ${SEED}, ${JOBS} jobs)`);
console.log(
  `  kills                 ${stats.kills} (${stats.killsOfRecovery} of a running recovery); ${stats.killedBeforeTask} more before atlas start wrote any task (nothing to recover)`,
);
console.log(
  `  killed in state       ${Object.entries(stats.killedAt)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
);
console.log(
  `  recoveries            ${stats.recoveries} (${Object.entries(stats.actions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')})`,
);
console.log(`  tasks                 ${stats.tasks}, completed ${stats.completed}`);
console.log(`  unparseable hook.json ${stats.unparseable}`);
console.log(`  history losses        ${stats.historyLosses}`);
console.log(`  not completed         ${stats.notCompleted}`);
console.log(`  lost files            ${stats.lostFiles}`);
console.log(`  wall time             ${wall.toFixed(1)} s`);
for (const p of stats.problems.slice(0, 30)) console.log(`  ! ${p}`);
// Removed at exit unless kept (bench/lib.mjs's tempDir).
if (KEEP) console.log(`  kept: ${work} (repos ${repos.join(', ')})`);
const ok = stats.unparseable === 0 && stats.historyLosses === 0 && stats.notCompleted === 0 && stats.lostFiles === 0;
process.exitCode = ok ? 0 : 1;

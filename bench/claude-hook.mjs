// What `atlas claude-hook` costs Claude Code per tool call (issue 11: PreToolUse and PostToolUse
// handling at most 1.5x `node -e 0`). 200 events of each kind, cycled from the real payloads in
// test/fixtures/claude-hooks, run in the worktree of a running atlas task (the heavier case: the
// request folder, the heartbeat and files_touched are written), in a repository no task owns, and
// as in sandbox mode (issue 35), where the hook only hands the event to atlas through its channel
// (a named pipe, ATLAS_HOOK_PIPE; a `cat` stands in for atlas's reader).
// Runs are interleaved with `node -e 0` so load drift hits all alike.
// Usage: npm run build && node bench/claude-hook.mjs   (RUNS=50 for a quicker look)
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNS = Number(process.env.RUNS ?? 200);
const TARGET = 1.5;
// What `atlas claude install` and `--settings` register: node and bin/claude-hook.cjs.
const HOOK_BIN = fileURLToPath(new URL('../bin/claude-hook.cjs', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../test/fixtures/claude-hooks/', import.meta.url));
const root = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-bench-claude-hook-')));
const home = join(root, 'home');
const env = { ...process.env, ATLAS_HOME: home };
delete env.ATLAS_CLAUDE_LAUNCHED;
delete env.ATLAS_CONVERSATION_ID;
const git = (cwd, ...args) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const stamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function makeRepo(name) {
  const dir = join(root, name);
  mkdirSync(dir);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, '-c', 'user.name=b', '-c', 'user.email=b@e', 'commit', '-q', '--allow-empty', '-m', 'initial');
  return dir;
}

/** A running task whose worktree is `repo` itself (task.json + hook.json as the runner writes them). */
function makeTask(repo) {
  const id = 'task-20260101-000001';
  const dir = join(home, 'workspaces', 'bench', 'tasks', id);
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  const at = stamp();
  const steps = [{ name: 'implement', type: 'ai', prompt: 'x', max_attempts: 3, on_failure: 'fail' }];
  const task = {
    schema_version: '1.0',
    id,
    workspace_id: 'bench',
    template: 'bench',
    description: 'bench',
    created_at: at,
    updated_at: at,
    status: 'step_running',
    repo_root: repo,
    worktree: repo,
    in_place: true,
    branch: 'main',
    steps,
  };
  const hook = {
    version: '1.0',
    task_id: id,
    workspace_id: 'bench',
    created_at: at,
    updated_at: at,
    state: 'step_running',
    current_step: { step_name: 'implement', step_index: 0, started_at: at, attempt: 1, max_attempts: 3 },
    history: [
      { timestamp: at, from_state: '', to_state: 'initializing', trigger: 'task_start' },
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
}

/** The recorded payloads of one event, with their paths moved into `repo`. */
function payloads(prefix, repo) {
  return readdirSync(FIXTURES)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.json') && !f.includes('-failure-'))
    .map((f) =>
      readFileSync(join(FIXTURES, f), 'utf8')
        .replaceAll('/tmp/atlas-fixture-repo', repo)
        .replaceAll('/tmp/atlas-fixture-claude-config', join(root, 'claude-config')),
    );
}

// CPU time (user + system, from /usr/bin/time where it exists) is the fairer figure on a busy
// machine: wall time then mostly measures the wait for a core.
const TIME_BIN = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

function timed(args, input, cwd, cpu, runEnv = env) {
  const command = TIME_BIN ? [TIME_BIN, ['-f', '@cpu %U %S', process.execPath, ...args]] : [process.execPath, args];
  const start = process.hrtime.bigint();
  const r = spawnSync(command[0], command[1], { input, cwd, env: runEnv, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}`);
  const m = /@cpu ([\d.]+) ([\d.]+)/.exec(r.stderr);
  if (cpu && m) cpu.push((Number(m[1]) + Number(m[2])) * 1000);
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

let reader;
try {
  const tasked = makeRepo('tasked');
  makeTask(tasked);
  const plain = makeRepo('plain');
  const cases = [];
  for (const [where, repo] of [
    ['task worktree', tasked],
    ['no task', plain],
  ]) {
    // The session's first events, as Claude Code sends them, so the request folder exists.
    for (const f of ['session-start-startup', 'user-prompt-submit']) timed([HOOK_BIN], payloads(f, repo)[0], repo);
    cases.push({ label: `PreToolUse  (${where})`, repo, inputs: payloads('pre-tool-use-', repo), times: [], cpu: [] });
    cases.push({ label: `PostToolUse (${where})`, repo, inputs: payloads('post-tool-use-', repo), times: [], cpu: [] });
  }
  const pipe = join(root, 'hook.fifo');
  execFileSync('mkfifo', ['-m', '600', pipe]);
  // Read-write, as atlas holds it: the reader never sees the end between two hooks.
  reader = spawn('sh', ['-c', 'exec cat > /dev/null <> "$0"', pipe], { stdio: 'ignore' });
  for (let open = false; !open; ) {
    try {
      closeSync(openSync(pipe, constants.O_WRONLY | constants.O_NONBLOCK));
      open = true;
    } catch {
      spawnSync('sleep', ['0.01']);
    }
  }
  const channelEnv = { ...env, ATLAS_HOOK_PIPE: pipe, ATLAS_CLAUDE_LAUNCHED: '1' };
  cases.push({
    label: 'PreToolUse  (sandbox mode, channel)',
    repo: tasked,
    env: channelEnv,
    inputs: payloads('pre-tool-use-', tasked),
    times: [],
    cpu: [],
  });
  cases.push({
    label: 'PostToolUse (sandbox mode, channel)',
    repo: tasked,
    env: channelEnv,
    inputs: payloads('post-tool-use-', tasked),
    times: [],
    cpu: [],
  });
  const baseline = [];
  const baseCpu = [];
  for (let i = 0; i < 3; i++) timed(['-e', '0'], '', root);
  for (let i = 0; i < RUNS; i++) {
    baseline.push(timed(['-e', '0'], '', root, baseCpu));
    for (const c of cases) c.times.push(timed([HOOK_BIN], c.inputs[i % c.inputs.length], c.repo, c.cpu, c.env));
  }
  const base = median(baseline);
  const cpuBase = baseCpu.length ? mean(baseCpu) : undefined;
  console.log(
    `${RUNS} events per kind, from ${cases[0].inputs.length} recorded PreToolUse and ${cases[1].inputs.length} PostToolUse payloads; load average ${loadavg()[0].toFixed(2)}`,
  );
  console.log(`node -e 0: wall median ${base.toFixed(1)} ms${cpuBase !== undefined ? `, CPU mean ${cpuBase.toFixed(1)} ms` : ''}`);
  let failed = false;
  for (const c of cases) {
    const wall = median(c.times) / base;
    const cpu = cpuBase !== undefined ? mean(c.cpu) / cpuBase : undefined;
    // Judged on CPU time when it is known (load makes wall time a measure of waiting).
    const ratio = cpu ?? wall;
    const ok = ratio <= TARGET;
    failed ||= !ok;
    console.log(
      `${c.label}: wall median ${median(c.times).toFixed(1)} ms = ${wall.toFixed(2)}x` +
        (cpu !== undefined ? `, CPU mean ${mean(c.cpu).toFixed(1)} ms = ${cpu.toFixed(2)}x` : '') +
        ` node -e 0 (target <= ${TARGET}x) ${ok ? 'ok' : 'OVER TARGET'}`,
    );
  }
  process.exitCode = failed ? 1 : 0;
} finally {
  reader?.kill();
  rmSync(root, { recursive: true, force: true });
}

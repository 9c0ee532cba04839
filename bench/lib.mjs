// Shared bench helpers: temp dirs, real git repos, fixture tasks written as plain JSON (the
// on-disk format is the contract), and timing of whole commands over interleaved runs.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = resolve(import.meta.dirname, '..');
export const ATLAS = join(ROOT, 'bin', 'atlas.cjs');

/**
 * The temp folders this bench made, removed when it exits (a server's home holds its tokens and
 * keys): `--keep` keeps them for a look after a failure.
 */
const made = [];
process.on('exit', () => {
  if (!process.argv.includes('--keep')) for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

export function git(cwd, ...args) {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
}

export function makeRepo() {
  const repo = tempDir('atlas-bench-repo-');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'bench@example.com');
  git(repo, 'config', 'user.name', 'Bench');
  writeFileSync(join(repo, 'README.md'), '# bench\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}

const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Writes task.json + hook.json for a running task with `events` history events and `checkpoints` checkpoints. */
export function writeFixtureTask(home, repo, { events = 10, checkpoints = 0, id = 'task-20260101-120000', workspace = 'bench' } = {}) {
  const dir = join(home, 'workspaces', workspace, 'tasks', id);
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);
  const steps = [
    { name: 'analyze', type: 'ai', prompt: 'a', idempotent: true, max_attempts: 3, on_failure: 'fail' },
    { name: 'implement', type: 'ai', prompt: 'i', max_attempts: 3, on_failure: 'fail' },
    { name: 'validate', type: 'validation', commands: ['true'], max_attempts: 1, on_failure: 'fail' },
  ];
  const task = {
    schema_version: '1.0',
    id,
    workspace_id: workspace,
    template: 'bugfix',
    description: 'bench task',
    created_at: iso(t0),
    updated_at: iso(t0),
    status: 'step_running',
    repo_root: repo,
    worktree: repo,
    in_place: true,
    branch: 'main',
    steps,
  };
  const history = [{ timestamp: iso(t0), from_state: '', to_state: 'initializing', trigger: 'task_start' }];
  const cycle = ['step_pending', 'step_running'];
  for (let i = 1; i < events; i++) {
    history.push({
      timestamp: iso(t0 + i * 1000),
      from_state: cycle[(i + 1) % 2],
      to_state: cycle[i % 2],
      trigger: i % 2 ? 'step_start' : 'step_retry',
      step_name: 'implement',
      details: { step_index: 1, attempt: 1 },
    });
  }
  const cps = Array.from({ length: checkpoints }, (_, i) => ({
    checkpoint_id: `ckpt-${i.toString(16).padStart(8, '0')}`,
    created_at: iso(t0 + i * 1000),
    step_name: 'implement',
    step_index: 1,
    description: `checkpoint ${i}`,
    trigger: 'interval',
    git_branch: 'main',
    git_dirty: false,
    files_snapshot: [{ path: 'README.md', size: 9, mod_time: iso(t0), sha256: '0123456789abcdef', exists: true }],
  }));
  const hook = {
    version: '1.0',
    task_id: id,
    workspace_id: workspace,
    created_at: iso(t0),
    updated_at: iso(t0 + events * 1000),
    state: 'step_running',
    current_step: { step_name: 'implement', step_index: 1, started_at: iso(t0), attempt: 1, max_attempts: 3, files_touched: ['README.md'] },
    history,
    checkpoints: cps,
    receipts: [],
    schema_version: '1.0',
  };
  writeFileSync(join(dir, 'task.json'), JSON.stringify(task, null, 2));
  writeFileSync(join(dir, 'hook.json'), JSON.stringify(hook, null, 2));
  return { id, dir };
}

/** Times each command `runs` times, interleaved so machine noise hits all alike. */
export function timeCommands(commands, runs = 30) {
  const samples = commands.map(() => []);
  for (let r = 0; r < runs; r++) {
    commands.forEach((c, i) => {
      const start = process.hrtime.bigint();
      const result = spawnSync(c.argv[0], c.argv.slice(1), { cwd: c.cwd, env: { ...process.env, ...c.env }, stdio: 'ignore' });
      if (result.status !== 0) throw new Error(`${c.label} exited ${result.status}`);
      samples[i].push(Number(process.hrtime.bigint() - start) / 1e6);
    });
  }
  return commands.map((c, i) => {
    const s = samples[i].sort((a, b) => a - b);
    return { label: c.label, median: s[Math.floor(s.length / 2)], p90: s[Math.floor(s.length * 0.9)], min: s[0] };
  });
}

export function report(rows) {
  for (const r of rows)
    console.log(
      `  ${r.label.padEnd(44)} median ${r.median.toFixed(1).padStart(7)} ms   p90 ${r.p90.toFixed(1).padStart(7)} ms   min ${r.min.toFixed(1).padStart(7)} ms`,
    );
}

/** A small deterministic PRNG (mulberry32), so a failing soak can be replayed with --seed. */
export function seededRandom(seed) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resolves with the port once an `atlas serve` child logs "listening" (rejects if it exits first). */
export function untilListening(child) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d;
      const m = /"msg":"listening".*?"port":(\d+)/.exec(buf);
      if (m) {
        child.stdout.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

/**
 * `conversations` conversations at once, each running `turns` turns one after another; `turn(i, k)`
 * is one turn. Returns how many failed and how long the whole took, in ms.
 */
export async function concurrentTurns(conversations, turns, turn) {
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conversations }, async (_, i) => {
      for (let k = 0; k < turns; k++) {
        try {
          await turn(i, k);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { errors, ms: performance.now() - t0 };
}

const REQUIRE_BANNER = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/**
 * atlas's TypeScript (or a test helper) bundled by esbuild into `outfile` and imported, for a bench
 * that calls it in-process. `require`: a require() for the CommonJS packages the bundle holds.
 */
export async function importBundle(outfile, options, { require = false } = {}) {
  const { build } = await import('esbuild');
  await build({
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
    ...(require ? { banner: { js: REQUIRE_BANNER } } : {}),
    ...options,
    outfile,
  });
  return import(pathToFileURL(outfile).href);
}

// Fixtures for recovery tests: temp ATLAS_HOME, real git repositories, tasks built with the store
// API and HookManager, forged or real owner.json files.

import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { StepCheckpoint } from '../../src/domain/checkpoint.js';
import type { Hook } from '../../src/domain/hook.js';
import { newHook, transition } from '../../src/domain/hook.js';
import type { StepContext } from '../../src/domain/step-context.js';
import type { Task } from '../../src/domain/task.js';
import type { StepDefinition } from '../../src/domain/template.js';
import { toTimestamp } from '../../src/domain/time.js';
import { HookManager } from '../../src/hook/manager.js';
import type { OwnerRecord } from '../../src/liveness/owner.js';
import { writeOwner } from '../../src/liveness/owner.js';
import { processStartIdentity } from '../../src/liveness/process-identity.js';
import { taskFiles } from '../../src/store/paths.js';
import type { TaskRef } from '../../src/store/task-store.js';
import { claimTaskDir, writeTask } from '../../src/store/task-store.js';

const cleanups: (() => void)[] = [];

export function cleanupRecoveryFixtures(): void {
  while (cleanups.length > 0) {
    try {
      cleanups.pop()!();
    } catch {
      // best effort
    }
  }
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A temp ATLAS_HOME, also set in the environment so nothing can touch the real one. */
export function tempHome(): string {
  const home = tempDir('atlas-home-');
  process.env['ATLAS_HOME'] = home;
  return home;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } }).trim();
}

/** A repository with one commit (README.md, src/app.ts) and a .gitignore for *.log. */
export function makeRepo(): string {
  const repo = tempDir('atlas-repo-');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.name', 'Test');
  git(repo, 'config', 'user.email', 'test@example.com');
  git(repo, 'config', 'commit.gpgsign', 'false');
  writeFileSync(join(repo, 'README.md'), '# demo\n');
  mkdirSync(join(repo, 'src'));
  writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 1;\n');
  writeFileSync(join(repo, '.gitignore'), '*.log\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}

export function commitAll(repo: string, message: string): string {
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
}

const base = { max_attempts: 3, on_failure: 'fail' as const };
export const steps = {
  analyze: (): StepDefinition => ({ ...base, name: 'analyze', type: 'ai', prompt: 'analyze {{description}}' }),
  implement: (): StepDefinition => ({ ...base, name: 'implement', type: 'ai', prompt: 'implement {{description}}' }),
  build: (idempotent?: boolean): StepDefinition => ({
    ...base,
    name: 'build',
    type: 'command',
    run: ['sleep 1'],
    ...(idempotent === undefined ? {} : { idempotent }),
  }),
  validate: (commands: string[] = ['npm test']): StepDefinition => ({ ...base, name: 'validate', type: 'validation', commands }),
  commit: (): StepDefinition => ({ ...base, name: 'commit', type: 'git', action: 'commit', message: 'fix: {{description}}' }),
  push: (): StepDefinition => ({ ...base, name: 'push', type: 'git', action: 'push' }),
  approve: (): StepDefinition => ({ ...base, name: 'approve', type: 'human', prompt: 'ok?' }),
};

export const defaultSteps = (): StepDefinition[] => [steps.analyze(), steps.implement(), steps.validate(), steps.commit()];

export interface TaskFixture {
  home: string;
  repo: string;
  ref: TaskRef;
  task: Task;
  manager: HookManager;
}

export async function makeTask(options: {
  home: string;
  repo: string;
  steps?: StepDefinition[];
  workspace?: string;
  at?: Date;
}): Promise<TaskFixture> {
  const at = options.at ?? new Date(Date.now() - 60 * 60_000);
  const ref = claimTaskDir(options.workspace ?? 'demo', at, options.home);
  const ts = toTimestamp(at);
  const task: Task = {
    schema_version: '1.0',
    id: ref.id,
    workspace_id: ref.workspace,
    template: 'bugfix',
    description: 'fix the null pointer in parseConfig',
    created_at: ts,
    updated_at: ts,
    status: 'initializing',
    repo_root: options.repo,
    worktree: options.repo,
    in_place: true,
    branch: 'main',
    base_commit: git(options.repo, 'rev-parse', 'HEAD'),
    steps: options.steps ?? defaultSteps(),
  };
  writeTask(ref.dir, task);
  const manager = new HookManager(ref, { maxCheckpoints: 50 });
  await manager.create(newHook(ref.id, ref.workspace, ts));
  return { home: options.home, repo: options.repo, ref, task, manager };
}

/** Writes hook.json directly (a fixture may need times in the past); HOOK.md is re-rendered. */
export async function setHook(f: TaskFixture, mutate: (hook: Hook) => Hook): Promise<Hook> {
  return f.manager.update(mutate);
}

export function iso(msAgo: number): string {
  return toTimestamp(new Date(Date.now() - msAgo));
}

/** initializing → step_pending, then steps [0, upTo) completed; all at `at`. */
export function completeSteps(hook: Hook, task: Task, upTo: number, at: string): Hook {
  let h = hook.state === 'initializing' ? transition(hook, { to: 'step_pending', trigger: 'setup_complete', at }) : hook;
  for (let i = 0; i < upTo; i++) {
    const name = task.steps[i]!.name;
    h = transition(h, { to: 'step_running', trigger: 'step_start', at, stepName: name, details: { step_index: i } });
    h = { ...h, current_step: { step_name: name, step_index: i, started_at: at, attempt: 1, max_attempts: 3 } };
    h = transition(h, { to: 'step_pending', trigger: 'step_complete', at, stepName: name, details: { step_index: i } });
  }
  return h;
}

/** Starts step `index` at `at` and fills current_step. */
export function runStep(hook: Hook, task: Task, index: number, at: string, extra: Partial<StepContext> = {}): Hook {
  const name = task.steps[index]!.name;
  const h = transition(hook, { to: 'step_running', trigger: 'step_start', at, stepName: name, details: { step_index: index } });
  return {
    ...h,
    updated_at: at,
    current_step: { step_name: name, step_index: index, started_at: at, attempt: 1, max_attempts: 3, ...extra },
  };
}

export function checkpoint(over: Partial<StepCheckpoint> & Pick<StepCheckpoint, 'step_index' | 'created_at'>): StepCheckpoint {
  return {
    checkpoint_id: `ckpt-${Math.floor(Math.random() * 0xffffffff)
      .toString(16)
      .padStart(8, '0')}`,
    step_name: 'implement',
    description: 'added the nil check',
    trigger: 'git_commit',
    git_branch: 'main',
    git_commit: 'abc123def4567890abc123def4567890abc123de',
    git_dirty: false,
    ...over,
  };
}

export function ownerRecord(over: Partial<OwnerRecord> = {}): OwnerRecord {
  const now = toTimestamp(new Date());
  return {
    pid: process.pid,
    host: hostname(),
    process_start: processStartIdentity(process.pid) ?? 'unknown',
    started_at: now,
    heartbeat_at: now,
    heartbeat_interval_ms: 10_000,
    stale_threshold_ms: 300_000,
    ...over,
  };
}

export function writeOwnerFile(ref: TaskRef, owner: OwnerRecord): void {
  writeOwner(taskFiles(ref.dir).owner, owner);
}

/** A pid that certainly is not running: a child that has exited. */
export function deadPid(): number {
  const out = execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(out);
}

let heartbeatScript: string | undefined;

/** Bundles a tiny program that claims owner.json with the real startHeartbeat and then idles. */
async function heartbeatProgram(): Promise<string> {
  if (heartbeatScript && existsSync(heartbeatScript)) return heartbeatScript;
  const dir = tempDir('atlas-hb-');
  const here = dirname(fileURLToPath(import.meta.url));
  const entry = join(dir, 'entry.ts');
  writeFileSync(
    entry,
    `import { startHeartbeat } from ${JSON.stringify(join(here, '..', '..', 'src', 'liveness', 'owner.ts'))};\n` +
      `const [path, interval, stale] = process.argv.slice(2);\n` +
      `startHeartbeat(path, { heartbeatIntervalMs: Number(interval), staleThresholdMs: Number(stale) });\n` +
      `process.stdout.write('ready\\n');\n` +
      `setInterval(() => {}, 1000);\n`,
  );
  const out = join(dir, 'heartbeat.mjs');
  await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'error' });
  heartbeatScript = out;
  return out;
}

/** A real child process that owns the task (owner.json + heartbeat), resolved once it has written owner.json. */
export async function spawnOwner(ref: TaskRef, settings = { heartbeatIntervalMs: 250, staleThresholdMs: 60_000 }): Promise<ChildProcess> {
  const script = await heartbeatProgram();
  const child = spawn(
    process.execPath,
    [script, taskFiles(ref.dir).owner, String(settings.heartbeatIntervalMs), String(settings.staleThresholdMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`heartbeat child exited early (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
  });
  return child;
}

export async function killAndWait(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** A crashed task (dead owner) running step `index` since 10 minutes ago. */
export async function crashedTask(home: string, repo: string, index: number, f?: TaskFixture, extra = {}): Promise<TaskFixture> {
  const t = f ?? (await makeTask({ home, repo }));
  const at = iso(10 * 60_000);
  await setHook(t, (h) => runStep(completeSteps(h, t.task, index, at), t.task, index, at, { last_output: 'halfway through', ...extra }));
  writeOwnerFile(t.ref, ownerRecord({ pid: deadPid() }));
  return t;
}

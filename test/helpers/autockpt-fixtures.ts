// Fixtures for automatic checkpoints and cleanup: temp ATLAS_HOME, real repositories and
// worktrees, tasks built with the store API (optionally back-dated), and the built CLI.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Hook } from '../../src/domain/hook.js';
import { newHook } from '../../src/domain/hook.js';
import type { HookState } from '../../src/domain/hook-state.js';
import type { Task, Workspace } from '../../src/domain/task.js';
import type { StepDefinition } from '../../src/domain/template.js';
import { toTimestamp } from '../../src/domain/time.js';
import { HookManager } from '../../src/hook/manager.js';
import { taskFiles } from '../../src/store/paths.js';
import type { TaskRef } from '../../src/store/task-store.js';
import { claimTaskDir, readWorkspace, saveWorkspace, writeTask } from '../../src/store/task-store.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const ATLAS_BIN = join(REPO_ROOT, 'bin', 'atlas.cjs');

const made: string[] = [];

export function tempDir(prefix = 'atlas-autockpt-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

/** Removes every temp dir made so far (call from afterAll). */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Environment for child processes: no inherited GIT_* or ATLAS_* settings, fixed identity. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('GIT_') || k.startsWith('ATLAS_')) continue;
    env[k] = v;
  }
  Object.assign(env, {
    GIT_AUTHOR_NAME: 'Dev',
    GIT_AUTHOR_EMAIL: 'dev@example.com',
    GIT_COMMITTER_NAME: 'Dev',
    GIT_COMMITTER_EMAIL: 'dev@example.com',
    GIT_CONFIG_NOSYSTEM: '1',
  });
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = cleanEnv()): string {
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs git and returns everything (for commands whose failure or output is the point). */
export function gitRun(cwd: string, args: string[], env: NodeJS.ProcessEnv): Run {
  const r = spawnSync('git', args, { cwd, env, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The built CLI (`npm run build` first) with ATLAS_HOME set. */
export function atlas(args: string[], options: { cwd: string; home: string; env?: Record<string, string | undefined> }): Run {
  const r = spawnSync(process.execPath, [ATLAS_BIN, ...args], {
    cwd: options.cwd,
    env: cleanEnv({ ATLAS_HOME: options.home, ...options.env }),
    encoding: 'utf8',
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function requireBuild(): void {
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli.js'))) throw new Error('run `npm run build` before these tests');
}

/** A real repository with one commit on main. */
export function makeRepo(): string {
  const dir = tempDir('atlas-repo-');
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['config', 'user.email', 'dev@example.com']);
  git(dir, ['config', 'user.name', 'Dev']);
  git(dir, ['config', 'commit.gpgsign', 'false']);
  writeFileSync(join(dir, 'README.md'), '# demo\n');
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'initial']);
  return dir;
}

const STEPS: StepDefinition[] = [
  { name: 'analyze', type: 'ai', prompt: 'Analyze {{description}}', idempotent: true, max_attempts: 3, on_failure: 'fail' },
  { name: 'implement', type: 'ai', prompt: 'Implement {{description}}', max_attempts: 3, on_failure: 'fail' },
];

export interface TaskFixture {
  ref: TaskRef;
  task: Task;
  manager: HookManager;
  worktree: string;
}

export interface MakeTaskOptions {
  home: string;
  repo: string;
  /** Default: a new linked worktree on a new branch. */
  inPlace?: boolean;
  workspace?: string;
  /** Final state (default step_running, inside step "implement"). */
  state?: HookState;
  /** When everything in the hook happened (default now): back-dates tasks for cleanup tests. */
  at?: Date;
  /** When the task id is taken from (default `at`). */
  idTime?: Date;
}

let counter = 0;

/** A task as the runner would leave it, built with the store API and HookManager. */
export async function makeTask(options: MakeTaskOptions): Promise<TaskFixture> {
  const at = options.at ?? new Date();
  const workspace = options.workspace ?? `ws-${++counter}`;
  const ref = claimTaskDir(workspace, options.idTime ?? at, options.home);
  const branch = `atlas/${ref.id}-${counter}`;
  let worktree = options.repo;
  if (!options.inPlace) {
    worktree = join(tempDir('atlas-wt-'), 'tree');
    git(options.repo, ['worktree', 'add', '-q', '-b', branch, worktree]);
  } else {
    git(options.repo, ['checkout', '-q', '-B', branch]);
  }
  const state = options.state ?? 'step_running';
  const stamp = toTimestamp(at);
  const task: Task = {
    schema_version: '1.0',
    id: ref.id,
    workspace_id: workspace,
    template: 'feature',
    description: `demo task ${counter}`,
    created_at: stamp,
    updated_at: stamp,
    status: state,
    repo_root: options.repo,
    worktree,
    in_place: Boolean(options.inPlace),
    branch,
    base_branch: 'main',
    steps: STEPS,
  };
  writeTask(ref.dir, task);
  const manager = new HookManager(ref, { maxCheckpoints: 50, now: () => at });
  await manager.create(newHook(ref.id, workspace, stamp));
  await driveTo(manager, state);
  const existing = readWorkspace(workspace, options.home);
  const ws: Workspace = existing
    ? { ...existing, tasks: [...existing.tasks, ref.id], updated_at: stamp }
    : {
        schema_version: '1.0',
        name: workspace,
        repo_root: options.repo,
        worktree,
        branch,
        created_at: stamp,
        updated_at: stamp,
        tasks: [ref.id],
      };
  await saveWorkspace(ws, options.home);
  return { ref, task, manager: new HookManager(ref, { maxCheckpoints: 50 }), worktree };
}

async function driveTo(manager: HookManager, state: HookState): Promise<void> {
  const step = { step_name: 'implement', step_index: 1, started_at: manager.timestamp(), attempt: 1, max_attempts: 3 };
  const run = async () => {
    await manager.transition({ to: 'step_pending', trigger: 'setup_complete' });
    await manager.transition({ to: 'step_running', trigger: 'step_start', stepName: 'implement', details: { step_index: 1 } }, (h) => ({
      ...h,
      current_step: step,
    }));
  };
  switch (state) {
    case 'initializing':
      return;
    case 'step_pending':
      await manager.transition({ to: 'step_pending', trigger: 'setup_complete' });
      return;
    case 'step_running':
      await run();
      return;
    case 'completed':
      await manager.transition({ to: 'step_pending', trigger: 'setup_complete' });
      await manager.transition({ to: 'completed', trigger: 'task_complete' });
      return;
    case 'failed':
      await run();
      await manager.transition({ to: 'failed', trigger: 'attempts_exhausted', stepName: 'implement' }, withoutStep);
      return;
    case 'abandoned':
      await run();
      await manager.transition({ to: 'abandoned', trigger: 'abandon' }, withoutStep);
      return;
    default:
      await run();
      await manager.transition({ to: state, trigger: 'test' });
  }
}

function withoutStep(hook: Hook): Hook {
  const { current_step: _dropped, ...rest } = hook;
  return rest;
}

export function readHook(ref: TaskRef): Hook {
  return JSON.parse(readFileSync(taskFiles(ref.dir).hook, 'utf8')) as Hook;
}

/** Polls until `check` returns a value (background hooks finish on their own time). */
export async function waitFor<T>(check: () => T | undefined, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

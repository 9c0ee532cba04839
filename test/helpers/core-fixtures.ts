// Shared test fixtures: temp ATLAS_HOME, real git repositories, tasks built with the store API,
// and the built CLI run as a real child process.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Hook } from '../../src/domain/hook.js';
import { newHook } from '../../src/domain/hook.js';
import { parseHook } from '../../src/domain/hook-schema.js';
import type { Task } from '../../src/domain/task.js';
import type { StepDefinition } from '../../src/domain/template.js';
import { toTimestamp } from '../../src/domain/time.js';
import { HookManager } from '../../src/hook/manager.js';
import type { TaskRef } from '../../src/store/task-store.js';
import { claimTaskDir, writeTask } from '../../src/store/task-store.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const ATLAS_BIN = join(REPO_ROOT, 'bin', 'atlas.cjs');

export function tempDir(prefix = 'atlas-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A real repository with one commit, identity configured locally. */
export function makeGitRepo(files: Record<string, string> = { 'README.md': '# demo\n' }): string {
  const dir = tempDir('atlas-repo-');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'dev@example.com');
  git(dir, 'config', 'user.name', 'Dev');
  git(dir, 'config', 'commit.gpgsign', 'false');
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

export interface FixtureTask {
  ref: TaskRef;
  task: Task;
  manager: HookManager;
}

const DEFAULT_STEPS: StepDefinition[] = [
  { name: 'analyze', type: 'ai', prompt: 'Analyze {{description}}', idempotent: true, max_attempts: 3, on_failure: 'fail' },
  { name: 'implement', type: 'ai', prompt: 'Implement {{description}}', max_attempts: 3, on_failure: 'fail' },
  { name: 'validate', type: 'validation', commands: ['true'], max_attempts: 1, on_failure: 'fail' },
];

/** A task whose hook is freshly initialised, built directly with the store API. */
export async function createFixtureTask(options: {
  home: string;
  repo: string;
  worktree?: string;
  workspace?: string;
  steps?: StepDefinition[];
  now?: Date;
}): Promise<FixtureTask> {
  const now = options.now ?? new Date();
  const workspace = options.workspace ?? 'demo';
  const ref = claimTaskDir(workspace, now, options.home);
  const worktree = options.worktree ?? options.repo;
  const task: Task = {
    schema_version: '1.0',
    id: ref.id,
    workspace_id: workspace,
    template: 'bugfix',
    description: 'fix the null pointer in parseConfig',
    created_at: toTimestamp(now),
    updated_at: toTimestamp(now),
    status: 'initializing',
    repo_root: options.repo,
    worktree,
    in_place: worktree === options.repo,
    branch: git(worktree, 'rev-parse', '--abbrev-ref', 'HEAD'),
    steps: options.steps ?? DEFAULT_STEPS,
  };
  writeTask(ref.dir, task);
  const manager = new HookManager(ref, { maxCheckpoints: 50 });
  await manager.create(newHook(ref.id, workspace, toTimestamp(now)));
  return { ref, task, manager };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function atlasSync(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): CliResult {
  const result = spawnSync(process.execPath, [ATLAS_BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    input: options.input,
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export function atlas(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [ATLAS_BIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * The JSON example of seed 003, copied verbatim into test/fixtures (a clone has no seeds folder
 * beside it). Tests parse it as it stands, so the example and the parser cannot drift apart.
 */
export function seedExampleText(): string {
  return readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'seed-003-hook-example.json'), 'utf8');
}

export function seedExampleHook(): Hook {
  return parseHook(JSON.parse(seedExampleText()));
}

/** Every path under a folder with its size and mtime (folders too), to prove nothing changed. */
export function treeListing(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) {
        out.push(`${path}/ ${st.mtimeMs}`);
        walk(path);
      } else out.push(`${path} ${st.size} ${st.mtimeMs}`);
    }
  };
  walk(root);
  return out;
}

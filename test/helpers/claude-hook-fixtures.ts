// Fixtures for the Claude Code integration: the recorded real hook payloads moved into a test's
// folders, a task on disk owning a working tree, and the real `claude` / `atlas claude-hook` run
// asynchronously (the fake Messages API answers from the test's own event loop).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './engine-fixtures.js';

const FIXTURES = join(ROOT, 'test', 'fixtures', 'claude-hooks');
export const ATLAS_BIN = join(ROOT, 'bin', 'atlas.cjs');
/** What `atlas claude install` registers (bin/atlas.cjs claude-hook reaches the same bundle). */
export const HOOK_BIN = join(ROOT, 'bin', 'claude-hook.cjs');

/** A recorded payload (test/fixtures/claude-hooks/<name>.json) with its paths moved. */
export function fixtureText(name: string, repo: string, configDir = join(repo, '..', 'claude-config')): string {
  return readFileSync(join(FIXTURES, `${name}.json`), 'utf8')
    .replaceAll('/tmp/atlas-fixture-repo', repo)
    .replaceAll('/tmp/atlas-fixture-claude-config', configDir);
}

export function fixtureEvent(name: string, repo: string, change: Record<string, unknown> = {}, configDir?: string): string {
  return JSON.stringify({ ...JSON.parse(fixtureText(name, repo, configDir)), ...change });
}

export interface DiskTaskOptions {
  state?: string;
  /** The trigger that entered the state (e.g. interrupted). */
  trigger?: string;
  id?: string;
  workspace?: string;
  withStep?: boolean;
}

/** task.json and hook.json as the runner writes them, for a task whose worktree is `worktree`. */
export function writeDiskTask(home: string, worktree: string, branch: string, options: DiskTaskOptions = {}): { id: string; dir: string } {
  const id = options.id ?? 'task-20260101-000001';
  const workspace = options.workspace ?? 'ws';
  const dir = join(home, 'workspaces', workspace, 'tasks', id);
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  const at = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const state = options.state ?? 'step_running';
  const steps = [{ name: 'implement', type: 'ai', prompt: 'fix it', max_attempts: 3, on_failure: 'fail' }];
  const task = {
    schema_version: '1.0',
    id,
    workspace_id: workspace,
    template: 'bugfix',
    description: 'fix the parser',
    created_at: at,
    updated_at: at,
    status: state,
    repo_root: worktree,
    worktree,
    in_place: true,
    branch,
    steps,
  };
  const history: Record<string, unknown>[] = [
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
  ];
  if (state !== 'step_running')
    history.push({
      timestamp: at,
      from_state: 'step_running',
      to_state: state,
      trigger: options.trigger ?? 'interrupted',
      step_name: 'implement',
    });
  const hook: Record<string, unknown> = {
    version: '1.0',
    task_id: id,
    workspace_id: workspace,
    created_at: at,
    updated_at: at,
    state,
    history,
    checkpoints: [],
    receipts: [],
    schema_version: '1.0',
  };
  if (options.withStep !== false)
    hook['current_step'] = {
      step_name: 'implement',
      step_index: 0,
      started_at: at,
      attempt: 1,
      max_attempts: 3,
      last_output: 'Half way: the parser test is written, the fix is not.',
    };
  writeFileSync(join(dir, 'task.json'), `${JSON.stringify(task, null, 2)}\n`);
  writeFileSync(join(dir, 'hook.json'), `${JSON.stringify(hook, null, 2)}\n`);
  return { id, dir };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAsync(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** The built `atlas claude-hook` with one event on stdin. */
export function runHook(input: string, cwd: string, env: NodeJS.ProcessEnv): Promise<RunResult> {
  return runAsync(process.execPath, [ATLAS_BIN, 'claude-hook'], { cwd, env, input });
}

export function readJsonLines(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l));
}

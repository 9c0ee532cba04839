// The executor of one task run, chosen once from execution.mode: local, or the sandbox with the
// task's policy. What was chosen is recorded in the task folder (execution.json) so that people,
// `atlas doctor` and later runs can see how each run was isolated.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { readJsonFile } from '../store/json-file.js';
import { taskFiles } from '../store/paths.js';
import { listTaskRefs, tryReadTask } from '../store/task-store.js';
import { localExecutor } from './local.js';
import type { SandboxPolicy } from './sandbox/policy.js';
import type { ExecutionMode, ProcessExecutor } from './types.js';

export const EXECUTION_FILE = 'execution.json';

export interface ExecutionRecord {
  mode: ExecutionMode;
  recorded_at: string;
  pid: number;
  /** Sandbox mode: the policy every process of the run was started with. */
  policy?: SandboxPolicy;
}

export interface TaskExecutorInput {
  task: { id: string; worktree: string; workspace_id: string };
  taskDir: string;
  home: string;
  config: Config;
  env?: NodeJS.ProcessEnv;
}

/** Worktrees of every other task atlas knows (their folders are unreadable to this task's sandbox). */
export function otherTaskWorktrees(home: string, taskId: string): string[] {
  const found = new Set<string>();
  for (const ref of listTaskRefs(home)) {
    if (ref.id === taskId) continue;
    const task = tryReadTask(ref.dir);
    if (task) found.add(task.worktree);
  }
  return [...found];
}

/** The policy this task's sandboxed processes get. */
export async function taskPolicy(input: TaskExecutorInput): Promise<SandboxPolicy> {
  const { buildPolicy } = await import('./sandbox/policy.js');
  return buildPolicy({ ...input, otherWorktrees: otherTaskWorktrees(input.home, input.task.id) });
}

export interface TaskExecution {
  executor: ProcessExecutor;
  record: ExecutionRecord;
  /** How the task's previous run was started, if it had one. */
  previous?: ExecutionRecord;
  /** The run has ended: the sandbox's proxies stop when no other run uses them. */
  release(): Promise<void>;
}

export async function createTaskExecutor(input: TaskExecutorInput): Promise<TaskExecution> {
  const base = { recorded_at: new Date().toISOString(), pid: process.pid };
  const previous = readExecutionRecord(input.taskDir);
  // What a killed sandboxed run of this task left goes before anything runs (a no-op while the
  // run that recorded it is alive; `atlas recover` has usually swept it already).
  const { finishLitter, sweepLitter } = await import('./sandbox/litter.js');
  await sweepLitter(input.taskDir);
  const before = previous ? { previous } : {};
  if (input.config.execution.mode === 'local') {
    const record: ExecutionRecord = { mode: 'local', ...base };
    writeFileAtomic(join(input.taskDir, EXECUTION_FILE), `${JSON.stringify(record, null, 2)}\n`);
    return { executor: localExecutor, record, ...before, release: () => Promise.resolve() };
  }
  const { assertSandboxReady } = await import('./readiness.js');
  await assertSandboxReady(input.env);
  // Before the policy is built: it makes the task folder's entries readable (not writable) inside,
  // and Claude Code's hooks write their events into pipes atlas makes here (integrations/claude/channel-pipe.ts).
  mkdirSync(taskFiles(input.taskDir).channel, { recursive: true, mode: 0o700 });
  const policy = await taskPolicy(input);
  const { createSandboxExecutor } = await import('./sandbox/executor.js');
  const { acquireSandbox, releaseSandbox } = await import('./sandbox/runtime.js');
  // Started before the first step, so that a sandbox that cannot start stops the run at once.
  await acquireSandbox(policy.allowed_domains);
  const record: ExecutionRecord = { mode: 'sandbox', ...base, policy };
  writeFileAtomic(join(input.taskDir, EXECUTION_FILE), `${JSON.stringify(record, null, 2)}\n`);
  const executor = createSandboxExecutor(policy, input.taskDir);
  const release = async () => {
    await executor.close?.();
    await releaseSandbox();
    finishLitter(input.taskDir);
  };
  return { executor, record, ...before, release };
}

/**
 * An executor like the task's for processes working in another folder (a pristine tree): in
 * sandbox mode its policy makes that folder and the task's tmp/ the only writable places.
 */
export async function treeExecutor(input: TaskExecutorInput, mode: ExecutionMode, dir: string): Promise<ProcessExecutor> {
  if (mode === 'local') return localExecutor;
  const policy = await taskPolicy({ ...input, task: { ...input.task, worktree: dir } });
  const { createSandboxExecutor } = await import('./sandbox/executor.js');
  return createSandboxExecutor(policy, input.taskDir);
}

/** One line for the run's output: the steps run sandboxed, and what that means. */
export function describeExecution(record: ExecutionRecord): string | undefined {
  const p = record.policy;
  if (record.mode !== 'sandbox' || !p) return undefined;
  const hosts = p.allowed_domains.length ? p.allowed_domains.join(', ') : 'none';
  return `steps run in the sandbox: writes only in the worktree, its git folders and ${p.tmpdir}${p.home ? `; $HOME is ${p.home}` : ''}; ${p.deny_read.length} paths unreadable (keys, secrets, other tasks); network: ${hosts} (\`atlas doctor\` shows the policy)`;
}

/** A run that is less isolated than the task's previous one says so. */
export function describeModeChange(execution: Pick<TaskExecution, 'record' | 'previous'>): string | undefined {
  if (execution.previous?.mode !== 'sandbox' || execution.record.mode !== 'local') return undefined;
  return 'the previous run of this task was sandboxed; this one runs locally, unsandboxed (--sandbox to keep it isolated)';
}

/** The execution record of a task's last run, if it has one. */
export function readExecutionRecord(taskDir: string): ExecutionRecord | undefined {
  try {
    const data = readJsonFile(join(taskDir, EXECUTION_FILE)) as Partial<ExecutionRecord>;
    if (data.mode !== 'local' && data.mode !== 'sandbox') return undefined;
    return data as ExecutionRecord;
  } catch {
    return undefined;
  }
}

// `atlas doctor`: can this machine run steps the configured way, and with which policy? Gathers
// the sandbox readiness (tools, the library's own checks, a trial `true` in a real sandbox) and
// the effective policy of the task of this directory (or of a task that would start here).
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import type { Readiness, Trial } from './readiness.js';
import { checkReadiness, trialRun } from './readiness.js';
import type { SandboxPolicy } from './sandbox/policy.js';
import type { ExecutionRecord } from './task-executor.js';
import { readExecutionRecord, taskPolicy } from './task-executor.js';
import type { ExecutionMode } from './types.js';

export interface DoctorReport {
  mode: ExecutionMode;
  /** The configured mode can run here (local always can). */
  ok: boolean;
  sandbox: Readiness & { trial?: Trial };
  /** The policy a sandboxed run of `policy_for` gets now. */
  policy: SandboxPolicy;
  policy_for: { task_id: string | null; worktree: string };
  /** How the task's last run was started (execution.json), if there is a task. */
  last_run?: ExecutionRecord;
}

export interface DoctorInput {
  home: string;
  config: Config;
  /** The task of this directory, if any. */
  task?: { id: string; worktree: string; workspace_id: string; dir: string };
  /** Where a new task would run when there is none. */
  cwd: string;
}

export async function runDoctor(input: DoctorInput): Promise<DoctorReport> {
  const readiness = await checkReadiness();
  const trial = readiness.ready ? await trialRun() : undefined;
  const sandboxOk = readiness.ready && trial?.ok === true;
  const task = input.task ?? {
    id: '(new task)',
    worktree: input.cwd,
    workspace_id: '(new)',
    dir: join(input.home, 'workspaces', '(new)', 'tasks', '(new task)'),
  };
  const policy = await taskPolicy({ task, taskDir: task.dir, home: input.home, config: input.config });
  const lastRun = input.task ? readExecutionRecord(input.task.dir) : undefined;
  return {
    mode: input.config.execution.mode,
    ok: input.config.execution.mode === 'local' || sandboxOk,
    sandbox: { ...readiness, ...(trial ? { trial } : {}) },
    policy,
    policy_for: { task_id: input.task?.id ?? null, worktree: policy.worktree },
    ...(lastRun ? { last_run: lastRun } : {}),
  };
}

// Creating a checkpoint: git state read in the task's own working tree (never the process's cwd),
// snapshots of the files the step touched, then one locked append to the hook.
import type { CheckpointTrigger, StepCheckpoint } from '../domain/checkpoint.js';
import type { Hook } from '../domain/hook.js';
import { addCheckpoint } from '../domain/hook.js';
import { isTerminal } from '../domain/hook-state.js';
import { dedupeFiles } from '../domain/step-context.js';
import { snapshotFiles } from '../git/snapshot.js';
import type { GitState } from '../git/state.js';
import { readGitState } from '../git/state.js';
import { newCheckpointId } from '../store/ids.js';
import type { HookManager } from './manager.js';

export interface CheckpointInput {
  description: string;
  trigger: CheckpointTrigger;
  artifacts?: string[];
  /** Git state already read by the caller. */
  git?: GitState;
  /** The commit to record instead of HEAD's (a git hook pins the commit it fired for). */
  commit?: string;
  /** Refuse (TaskEndedError) when the hook is terminal: for checkpoints aimed at "the running task". */
  requireLive?: boolean;
}

export class TaskEndedError extends Error {
  override name = 'TaskEndedError';
}

/** The step a checkpoint belongs to: the active one, else the last one the history mentions. */
function checkpointStep(hook: Hook): { index: number; name: string | undefined } {
  if (hook.current_step) return { index: hook.current_step.step_index, name: hook.current_step.step_name };
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const index = hook.history[i]!.details?.['step_index'];
    if (typeof index === 'number') return { index, name: hook.history[i]!.step_name };
  }
  return { index: 0, name: undefined };
}

export async function createCheckpoint(manager: HookManager, input: CheckpointInput): Promise<StepCheckpoint> {
  const task = manager.readTask();
  let created: StepCheckpoint | undefined;
  // git starts first and runs while the hook is locked and parsed; everything else happens inside
  // the lock, so the hook (which may hold thousands of events) is read once.
  const gitState = input.git ? Promise.resolve(input.git) : task ? readGitState(task.worktree) : Promise.resolve(undefined);
  gitState.catch(() => {}); // awaited below; this only keeps an early abort from leaving it unobserved
  await manager.update(async (hook) => {
    if (input.requireLive && isTerminal(hook.state)) throw new TaskEndedError(`task ${hook.task_id} has ended (${hook.state})`);
    const git = await gitState;
    const files = dedupeFiles([...(hook.current_step?.files_touched ?? []), ...(git?.changed ?? [])]);
    const snapshots = task && files.length > 0 ? await snapshotFiles(task.worktree, files) : [];
    const step = checkpointStep(hook);
    const checkpoint: StepCheckpoint = {
      checkpoint_id: newCheckpointId(),
      created_at: manager.timestamp(),
      step_name: step.name ?? task?.steps[step.index]?.name ?? '',
      step_index: step.index,
      description: input.description,
      trigger: input.trigger,
      git_branch: git?.branch ?? task?.branch ?? '',
      git_dirty: git?.dirty ?? false,
    };
    const commit = input.commit ?? git?.commit;
    if (commit) checkpoint.git_commit = commit;
    if (input.artifacts && input.artifacts.length > 0) checkpoint.artifacts = input.artifacts;
    if (snapshots.length > 0) checkpoint.files_snapshot = snapshots;
    created = checkpoint;
    return addCheckpoint(hook, checkpoint, manager.maxCheckpoints);
  });
  return created!;
}

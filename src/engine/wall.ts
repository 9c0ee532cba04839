// What a sandboxed step leaves behind crosses into the person's repository only checked: its git
// objects through the verified crossing (src/git/cross-objects.ts), before atlas reads the task's
// git again; then what the branch brings in (control-review.ts). A crossing or a review that fails
// stops the task (the step's result becomes a permanent failure).
import { AtlasError } from '../domain/errors.js';
import type { Task } from '../domain/task.js';
import { crossTaskObjects } from '../git/cross-objects.js';
import type { ReviewRun } from './control-review.js';
import { reviewControlChanges } from './control-review.js';
import type { StepResult } from './executors/types.js';

/** Brings the task's new objects across; throws when they do not verify or HEAD was moved. */
export async function crossTask(task: Task, taskDir: string): Promise<number> {
  const { objects } = await crossTaskObjects({ worktree: task.worktree, taskDir, branch: task.branch, base: task.base_commit });
  return objects;
}

export async function afterSandboxedStep(run: ReviewRun, index: number, result: StepResult): Promise<StepResult> {
  try {
    await crossTask(run.task, run.manager.ref.dir);
    // Then what the branch brings in, read from the verified objects.
    return await reviewControlChanges(run, index, result);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = error instanceof AtlasError ? error.hint : undefined;
    return { status: 'failed', error: message, permanent: true, ...(hint ? { hint } : {}) };
  }
}

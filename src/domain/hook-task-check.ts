// A hook.json is only acted on in its own task: its task_id must be its folder's task, and the
// step it says is running must be one of task.json's steps. Pure: the caller reads both files.
import type { Hook } from './hook.js';

export interface HookTaskMismatch {
  /** The hook.json field at fault. */
  field: string;
  problem: string;
  fix: string;
}

export function hookTaskMismatch(hook: Hook, taskId: string, steps: readonly { name: string }[] | undefined): HookTaskMismatch | undefined {
  if (hook.task_id !== taskId) {
    return {
      field: 'task_id',
      problem: `is "${hook.task_id}", but the file is in task ${taskId}'s folder`,
      fix: `this hook.json belongs to another task: put back task ${taskId}'s own hook.json (from a backup), or set task_id to "${taskId}" if only the id is wrong`,
    };
  }
  const step = hook.current_step;
  if (step === undefined || steps === undefined) return undefined;
  if (step.step_index >= steps.length) {
    return {
      field: 'current_step.step_index',
      problem: `is ${step.step_index}, but task.json has ${steps.length} step${steps.length === 1 ? '' : 's'} (0..${steps.length - 1})`,
      fix: "set current_step to the step that was running (its index in task.json's steps), or restore hook.json from a backup",
    };
  }
  const expected = steps[step.step_index]!.name;
  if (step.step_name !== expected) {
    return {
      field: 'current_step.step_name',
      problem: `is "${step.step_name}", but step ${step.step_index} of task.json is "${expected}"`,
      fix: 'make current_step name the step at its step_index in task.json, or restore hook.json from a backup',
    };
  }
  return undefined;
}

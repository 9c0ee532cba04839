// What the board shows of a task that stopped (docs/ui.md): the diagnosis `atlas recover` prints
// (what happened, the last output, why the recommendation) and every action it offers with what
// each does, computed from the hook alone: nothing is taken over or written (the Recover button
// runs `atlas recover`, which diagnoses for real). Also why a task failed, and its artifacts.
import type { Hook } from '../../domain/hook.js';
import type { RecoveryContext } from '../../domain/recovery-context.js';
import { checkpointToReturnTo, diagnoseCrash, stepPosition } from '../../domain/recovery-rules.js';
import type { Task } from '../../domain/task.js';
import type { ActionOption } from '../../recovery/actions.js';
import { actionOptions } from '../../recovery/actions.js';

export interface RecoveryPlan {
  /** True when `atlas recover` already diagnosed it (hook.recovery); else what it would say now. */
  diagnosed: boolean;
  recovery: RecoveryContext;
  last_output: string;
  options: ActionOption[];
}

export function recoveryPlan(task: Task, hook: Hook, now: string): RecoveryPlan {
  const diagnosed = hook.recovery !== undefined && hook.recovery !== null;
  const recovery = diagnosed ? hook.recovery! : diagnoseCrash({ hook, steps: task.steps, liveness: 'gone', now });
  const position = stepPosition(hook, task.steps);
  const recommended =
    recovery.recommended_action === 'retry_from_checkpoint' && recovery.last_checkpoint_id
      ? hook.checkpoints.find((c) => c.checkpoint_id === recovery.last_checkpoint_id && c.git_commit)
      : undefined;
  const checkpoint = recommended ?? checkpointToReturnTo(hook, task.steps);
  const options = actionOptions({ taskId: hook.task_id, position, checkpoint, stepNames: task.steps.map((s) => s.name) });
  return { diagnosed, recovery, last_output: hook.current_step?.last_output ?? recovery.partial_output ?? '', options };
}

export interface FailureReport {
  step_name: string | null;
  error: string;
  /** The failing command's output (a receipt's artifacts, relative to the task directory). */
  artifacts: string[];
  last_output: string;
}

/** Why a failed task failed: the last step_failed (or human_rejected) event and its step's artifacts. */
export function failureOf(hook: Hook): FailureReport | undefined {
  const e = [...hook.history].reverse().find((h) => h.to_state === 'failed');
  if (!e) return undefined;
  const d = e.details ?? {};
  const step = e.step_name ?? null;
  const error = typeof d['error'] === 'string' ? d['error'] : typeof d['note'] === 'string' ? `rejected: ${d['note']}` : e.trigger;
  const artifacts = hook.receipts
    .filter((r) => r.step_name === step && r.exit_code !== 0)
    .flatMap((r) => [r.stdout_artifact, r.stderr_artifact])
    .filter((p): p is string => typeof p === 'string');
  return { step_name: step, error, artifacts, last_output: hook.current_step?.last_output ?? '' };
}

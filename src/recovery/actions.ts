// Which recovery actions make sense where the task stopped, and what each one will do, in words
// shared by the prompt, the text output and the errors.
import type { StepCheckpoint } from '../domain/checkpoint.js';
import type { RecoveryAction } from '../domain/recovery-context.js';
import type { StepPosition } from '../domain/recovery-rules.js';

export interface ActionOption {
  action: RecoveryAction;
  /** Undefined when the action can be taken; else why not. */
  unavailable?: string;
  /** What choosing it will do, in one sentence. */
  effect: string;
}

export interface ActionFacts {
  taskId: string;
  position: StepPosition;
  /** Where retry_from_checkpoint would return (checkpointToReturnTo). */
  checkpoint: StepCheckpoint | undefined;
  /** Name of the step after the current one (or the next to run, between steps). */
  stepNames: readonly string[];
}

function q(name: string | undefined): string {
  return name === undefined ? 'the next step' : `"${name}"`;
}

export function actionOptions(facts: ActionFacts): ActionOption[] {
  const { position, checkpoint, taskId } = facts;
  const later = `atlas recover --task ${taskId} --action …`;
  if (position.kind === 'between') {
    const next = facts.stepNames[position.next];
    const between = 'no step was running when the task stopped';
    return [
      {
        action: 'retry_step',
        effect:
          next !== undefined
            ? `continue the task: run ${q(next)} from its start, then the rest`
            : 'continue the task: every step is done, so it completes',
      },
      { action: 'retry_from_checkpoint', unavailable: `${between}; there is no cut-off step to return to a checkpoint of`, effect: '' },
      { action: 'skip_step', unavailable: `${between}; skipping would skip ${q(next)}, which never ran`, effect: '' },
      { action: 'manual', effect: `leave the task waiting for a person (awaiting_human); continue later with ${later}` },
    ];
  }
  const name = q(position.step.step_name);
  const after = facts.stepNames[position.step.step_index + 1];
  const attempt = position.step.attempt + 1;
  // The runner grants an explicit retry past max_attempts exactly one attempt (no automatic ones),
  // and counts it as the last: the same "attempt N/N" the run then shows (run-step.ts).
  const past =
    attempt > position.step.max_attempts
      ? ` — past max_attempts (${position.step.max_attempts}): one extra attempt, and if it fails the task fails`
      : '';
  return [
    {
      action: 'retry_step',
      effect: `run ${name} again (attempt ${attempt}/${Math.max(attempt, position.step.max_attempts)}${past}) on the working tree as it is now; an agent step resumes its session with a note of what happened`,
    },
    checkpoint?.git_commit
      ? {
          action: 'retry_from_checkpoint',
          effect:
            `save every uncommitted change on a new atlas/recovery/${taskId}/<time> branch, reset the tree to checkpoint ${checkpoint.checkpoint_id} ` +
            `(commit ${checkpoint.git_commit.slice(0, 12)}${checkpoint.git_dirty ? ', its uncommitted part is not in the commit' : ''}), then run ${name} again from there${past}`,
        }
      : { action: 'retry_from_checkpoint', unavailable: 'no checkpoint has a commit to return to', effect: '' },
    {
      action: 'skip_step',
      effect: `record ${name} as complete without running it again and go on with ${after !== undefined ? q(after) : 'the end of the task'}`,
    },
    { action: 'manual', effect: `leave the task waiting for a person (awaiting_human); inspect the tree, then ${later}` },
  ];
}

// What a run ends with: the hook state, the exit code (docs/exit-codes.md) and one line for the
// user saying what happened and what to do next.
import { EXIT } from '../domain/errors.js';
import type { Task } from '../domain/task.js';
import type { TaskOutcome } from './contract.js';

function stepLabel(task: Task, index: number): string {
  return `step ${index + 1}/${task.steps.length} "${task.steps[index]?.name ?? '?'}"`;
}

export function completedOutcome(task: Task): TaskOutcome {
  const where = task.in_place ? `in ${task.worktree}` : `on branch ${task.branch} in ${task.worktree}`;
  return {
    state: 'completed',
    exitCode: EXIT.ok,
    message: `task ${task.id} completed: ${task.steps.length} step${task.steps.length === 1 ? '' : 's'} done ${where}`,
  };
}

export function failedOutcome(task: Task, index: number, error: string, hint?: string): TaskOutcome {
  return {
    state: 'failed',
    exitCode: EXIT.failure,
    message: `task ${task.id} failed at ${stepLabel(task, index)}: ${error}${hint ? ` (${hint})` : ''}. Details: atlas hook status --task ${task.id}`,
  };
}

export function rejectedOutcome(task: Task, index: number): TaskOutcome {
  return { state: 'failed', exitCode: EXIT.failure, message: `task ${task.id} was rejected at ${stepLabel(task, index)} and has failed` };
}

/** Without a terminal nobody saw the step's prompt: the message carries it, then the two answers. */
export function approvalOutcome(task: Task, index: number, prompt?: string): TaskOutcome {
  const asked = prompt?.trim();
  if (!asked) {
    return {
      state: 'awaiting_human',
      exitCode: EXIT.waiting,
      message: `task ${task.id} is waiting for approval at ${stepLabel(task, index)}: run atlas resume --task ${task.id} --approve (or --reject)`,
    };
  }
  return {
    state: 'awaiting_human',
    exitCode: EXIT.waiting,
    message: [
      `task ${task.id} is waiting for approval at ${stepLabel(task, index)}:`,
      ...asked.split('\n').map((l) => `  ${l}`.trimEnd()),
      `approve: atlas resume --task ${task.id} --approve`,
      `reject:  atlas resume --task ${task.id} --reject`,
    ].join('\n'),
    prompt: asked,
  };
}

export function pausedOutcome(task: Task, index: number): TaskOutcome {
  return {
    state: 'awaiting_human',
    exitCode: EXIT.waiting,
    message: `task ${task.id} is paused at ${stepLabel(task, index)}: continue with atlas resume --task ${task.id}`,
  };
}

export function askOutcome(task: Task, index: number, error: string, hint?: string): TaskOutcome {
  return {
    state: 'awaiting_human',
    exitCode: EXIT.waiting,
    message:
      `task ${task.id} stopped at ${stepLabel(task, index)}: ${error}${hint ? ` (${hint})` : ''}. ` +
      `Fix the cause, then run atlas resume --task ${task.id} to retry the step (--approve to accept it as is, --reject to fail the task)`,
  };
}

export function interruptedOutcome(task: Task, index: number, signal: string): TaskOutcome {
  return {
    state: 'awaiting_human',
    exitCode: EXIT.interrupted,
    message:
      `task ${task.id} was interrupted (${signal}) during ${stepLabel(task, index)}; its processes were stopped and the hook is waiting. ` +
      `Continue with atlas recover --task ${task.id} (or atlas resume --task ${task.id})`,
  };
}

/** OnColdStart failed: the agent did not start and the task waits in awaiting_human (recoverable). */
export function coldStartFailedOutcome(task: Task, index: number, error: string, moved?: { paths: string[]; to: string }): TaskOutcome {
  const aside = moved
    ? ` Files the failed hook run added to the working tree were moved to ${moved.to} (${moved.paths.slice(0, 3).join(', ')}${moved.paths.length > 3 ? ', …' : ''}).`
    : '';
  return {
    state: 'awaiting_human',
    exitCode: EXIT.waiting,
    message:
      `task ${task.id} did not start the agent at ${stepLabel(task, index)}: ${error}.${aside} ` +
      `Fix the hook, then continue with atlas recover --task ${task.id} (or atlas resume --task ${task.id})`,
  };
}

// What `atlas resume` does with a task that waits in awaiting_human, decided from why it waits
// (the trigger of the transition into awaiting_human) and the user's flags (docs/commands.md).
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import type { EntryDirective } from './contract.js';

export type WaitReason = 'approval' | 'paused' | 'interrupted' | 'step_failed' | 'recovery' | 'other';

export function waitReason(hook: Hook): WaitReason {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const e = hook.history[i]!;
    if (e.to_state !== 'awaiting_human' || e.from_state === 'awaiting_human') continue;
    switch (e.trigger) {
      case 'human_approval_required':
        return 'approval';
      case 'human_paused':
        return 'paused';
      case 'interrupted':
        return 'interrupted';
      case 'step_failed':
        return 'step_failed';
      default:
        return e.from_state === 'recovering' ? 'recovery' : 'other';
    }
  }
  return 'other';
}

export type ResumePlan = { kind: 'run'; entry: EntryDirective; what: string } | { kind: 'wait'; message: string };

/** Flags that exclude each other: refused (exit 2) before any task is looked for. */
export function checkResumeFlags(options: { approve?: boolean; reject?: boolean }): void {
  if (options.approve && options.reject) {
    throw new AtlasError('--approve and --reject exclude each other', { exitCode: EXIT.input, hint: 'pass one of them' });
  }
}

export function planResume(hook: Hook, options: { approve?: boolean; reject?: boolean; interactive: boolean; note?: string }): ResumePlan {
  checkResumeFlags(options);
  const note = options.note !== undefined ? { note: options.note } : {};
  if (options.approve) return { kind: 'run', entry: { kind: 'approve', ...note }, what: 'approving the waiting step' };
  if (options.reject) return { kind: 'run', entry: { kind: 'reject', ...note }, what: 'rejecting the waiting step' };
  const reason = waitReason(hook);
  if (reason === 'approval' || reason === 'paused') {
    if (options.interactive) return { kind: 'run', entry: { kind: 'continue' }, what: 'asking for approval again' };
    return {
      kind: 'wait',
      message: `task ${hook.task_id} waits for approval: pass --approve or --reject (or run atlas resume on a terminal to be asked)`,
    };
  }
  return {
    kind: 'run',
    entry: { kind: 'retry_step', ...note },
    what: reason === 'interrupted' ? 'running the interrupted step again' : 'retrying the step',
  };
}

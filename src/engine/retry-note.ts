// Attempts and what a new attempt is told about the previous one, derived from hook history.
import type { Hook } from '../domain/hook.js';
import type { StepDefinition } from '../domain/template.js';

/** How many times the step at `index` has started (its step_start events). */
export function countStepStarts(hook: Hook, index: number): number {
  let count = 0;
  for (const event of hook.history) {
    if (event.trigger === 'step_start' && event.details?.['step_index'] === index) count++;
  }
  return count;
}

/** Why the previous attempt of the step did not finish, from the latest event about it. */
export function previousAttemptEnding(hook: Hook, index: number): string {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const e = hook.history[i]!;
    const d = e.details ?? {};
    if (e.trigger === 'step_start' && d['step_index'] === index) break;
    if (d['step_index'] !== undefined && d['step_index'] !== index) continue;
    switch (e.trigger) {
      case 'step_retry':
      case 'step_failed':
        return `it failed: ${String(d['error'] ?? 'unknown error')}`;
      case 'cold_start_failed':
        return 'its OnColdStart lifecycle hook failed, so the agent never started';
      case 'interrupted':
        return `it was interrupted (${String(d['signal'] ?? 'signal')}) and its processes were stopped`;
      case 'crash_detected':
        return `atlas stopped unexpectedly while it ran${hook.recovery ? ` (${hook.recovery.crash_type}: ${hook.recovery.reason})` : ''}`;
      default:
        break;
    }
  }
  if (hook.recovery) return `atlas stopped unexpectedly while it ran (${hook.recovery.crash_type}: ${hook.recovery.reason})`;
  return 'it did not finish';
}

export function defaultRetryNote(hook: Hook, step: StepDefinition, index: number, attempt: number): string {
  return (
    `This is attempt ${attempt} of the step "${step.name}". The previous attempt did not finish: ${previousAttemptEnding(hook, index)}. ` +
    'The working tree may already hold part of the work: check git status and git diff, keep what is right, and finish the step ' +
    'without starting over.'
  );
}

// The retention rule (seed 003 RetentionConfig): a task in a terminal state is kept for its
// state's retention, counted from when it ended; anything else is always kept. Pure.
import type { Hook } from '../domain/hook.js';
import type { HookState } from '../domain/hook-state.js';

export type TerminalState = 'completed' | 'failed' | 'abandoned';

export type RetentionMs = Record<TerminalState, number>;

export function isTerminalState(state: HookState): state is TerminalState {
  return state === 'completed' || state === 'failed' || state === 'abandoned';
}

/**
 * When the task ended: the later of its terminal transition and the hook's last update (a
 * checkpoint recorded afterwards counts as activity). Undefined when neither is a valid time.
 */
export function endedAt(hook: Hook): string | undefined {
  let transition: string | undefined;
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const event = hook.history[i]!;
    if (event.to_state === hook.state && event.from_state !== hook.state) {
      transition = event.timestamp;
      break;
    }
  }
  const candidates = [hook.updated_at, transition].filter((t): t is string => t !== undefined && Number.isFinite(Date.parse(t)));
  if (candidates.length === 0) return undefined;
  return candidates.reduce((a, b) => (Date.parse(a) >= Date.parse(b) ? a : b));
}

export type RetentionDecision =
  | { expired: true; state: TerminalState; endedAt: string; ageMs: number; retentionMs: number }
  | { expired: false; why: 'active' | 'within_retention' | 'no_end_time'; state: HookState; ageMs?: number; retentionMs?: number };

export function retentionDecision(hook: Hook, retention: RetentionMs, now: Date): RetentionDecision {
  const state = hook.state;
  if (!isTerminalState(state)) return { expired: false, why: 'active', state };
  const ended = endedAt(hook);
  if (ended === undefined) return { expired: false, why: 'no_end_time', state };
  const ageMs = Math.max(0, now.getTime() - Date.parse(ended));
  const retentionMs = retention[state];
  if (ageMs > retentionMs) return { expired: true, state, endedAt: ended, ageMs, retentionMs };
  return { expired: false, why: 'within_retention', state, ageMs, retentionMs };
}

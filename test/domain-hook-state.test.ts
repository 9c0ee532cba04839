import { describe, expect, it } from 'vitest';
import type { HookState, HookStateOrNone } from '../src/domain/hook-state.js';
import {
  allowedTransitions,
  assertTransition,
  canTransition,
  HOOK_STATES,
  InvalidTransitionError,
  isHookState,
  isTerminal,
} from '../src/domain/hook-state.js';

// The full expected table: seed 003 plus DESIGN §4 (→ recovering / → abandoned from any
// non-terminal state, → failed from step_running, step_validating, recovering, awaiting_human).
const EXPECTED: Record<HookStateOrNone, HookState[]> = {
  '': ['initializing'],
  initializing: ['step_pending', 'recovering', 'failed', 'abandoned'],
  step_pending: ['step_running', 'recovering', 'completed', 'abandoned'],
  step_running: ['step_pending', 'step_validating', 'awaiting_human', 'recovering', 'failed', 'abandoned'],
  step_validating: ['step_pending', 'awaiting_human', 'recovering', 'failed', 'abandoned'],
  awaiting_human: ['step_pending', 'step_running', 'recovering', 'failed', 'abandoned'],
  recovering: ['step_pending', 'step_running', 'awaiting_human', 'failed', 'abandoned'],
  completed: [],
  failed: [],
  abandoned: [],
};

describe('hook state machine', () => {
  const froms = Object.keys(EXPECTED) as HookStateOrNone[];

  for (const from of froms) {
    for (const to of HOOK_STATES) {
      const valid = EXPECTED[from].includes(to);
      it(`${from || '(none)'} → ${to} is ${valid ? 'valid' : 'rejected'}`, () => {
        expect(canTransition(from, to)).toBe(valid);
        if (valid) expect(() => assertTransition(from, to)).not.toThrow();
        else expect(() => assertTransition(from, to)).toThrow(InvalidTransitionError);
      });
    }
  }

  it('lists allowed targets in a stable order', () => {
    for (const from of froms) expect(new Set(allowedTransitions(from))).toEqual(new Set(EXPECTED[from]));
  });

  it('terminal states reject every outgoing transition with a message saying so', () => {
    for (const from of ['completed', 'failed', 'abandoned'] as const) {
      expect(isTerminal(from)).toBe(true);
      expect(allowedTransitions(from)).toEqual([]);
      expect(() => assertTransition(from, 'step_pending')).toThrow(/terminal/);
    }
  });

  it('an invalid transition names the states the hook may go to', () => {
    expect(() => assertTransition('step_pending', 'step_validating')).toThrow(
      'invalid hook transition step_pending → step_validating: from step_pending the hook may go to step_running, recovering, completed, abandoned',
    );
  });

  it('round-trips every state through its string form', () => {
    for (const state of HOOK_STATES) {
      expect(isHookState(JSON.parse(JSON.stringify(state)))).toBe(true);
    }
    expect(isHookState('running')).toBe(false);
    expect(isHookState('')).toBe(false);
  });
});

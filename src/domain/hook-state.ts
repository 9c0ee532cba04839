// The hook state machine (seed 003 table plus DESIGN §4 additions). Pure data and rules.

export const HOOK_STATES = [
  'initializing',
  'step_pending',
  'step_running',
  'step_validating',
  'awaiting_human',
  'recovering',
  'completed',
  'failed',
  'abandoned',
] as const;

export type HookState = (typeof HOOK_STATES)[number];

/** The state before a hook exists: the seed writes it as "" in the first history event. */
export type HookStateOrNone = HookState | '';

export const TERMINAL_STATES: readonly HookState[] = ['completed', 'failed', 'abandoned'];

const STATE_SET: ReadonlySet<string> = new Set(HOOK_STATES);

export function isHookState(value: unknown): value is HookState {
  return typeof value === 'string' && STATE_SET.has(value);
}

export function isTerminal(state: HookStateOrNone): boolean {
  return state !== '' && TERMINAL_STATES.includes(state);
}

/** Seed 003's table, extended with → failed where attempts run out or recovery is impossible. */
const TABLE: Record<HookStateOrNone, readonly HookState[]> = {
  '': ['initializing'],
  initializing: ['step_pending', 'failed'],
  step_pending: ['step_running', 'completed'],
  step_running: ['step_validating', 'step_pending', 'awaiting_human', 'failed'],
  step_validating: ['step_pending', 'awaiting_human', 'failed'],
  awaiting_human: ['step_pending', 'step_running', 'failed'],
  recovering: ['step_pending', 'step_running', 'awaiting_human', 'failed'],
  completed: [],
  failed: [],
  abandoned: [],
};

/** Every state a hook may move to from `from`, including the any-non-terminal rules. */
export function allowedTransitions(from: HookStateOrNone): HookState[] {
  const targets = new Set<HookState>(TABLE[from]);
  if (from !== '' && !isTerminal(from)) {
    if (from !== 'recovering') targets.add('recovering');
    targets.add('abandoned');
  }
  return HOOK_STATES.filter((s) => targets.has(s));
}

export function canTransition(from: HookStateOrNone, to: HookState): boolean {
  return allowedTransitions(from).includes(to);
}

export class InvalidTransitionError extends Error {
  constructor(
    readonly from: HookStateOrNone,
    readonly to: HookState,
  ) {
    const allowed = allowedTransitions(from);
    const fromText = from === '' ? '(new hook)' : from;
    super(
      isTerminal(from)
        ? `invalid hook transition ${fromText} → ${to}: ${fromText} is terminal and accepts no transitions`
        : `invalid hook transition ${fromText} → ${to}: from ${fromText} the hook may go to ${allowed.join(', ')}`,
    );
    this.name = 'InvalidTransitionError';
  }
}

export function assertTransition(from: HookStateOrNone, to: HookState): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}

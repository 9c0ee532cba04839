// The hook: durable state of one task (seed 003 Hook, HookEvent). Pure functions that return new
// hooks; persistence and locking live in store/ and hook/.
import type { StepCheckpoint } from './checkpoint.js';
import { pruneCheckpoints } from './checkpoint.js';
import type { HookState, HookStateOrNone } from './hook-state.js';
import { assertTransition } from './hook-state.js';
import type { ValidationReceipt } from './receipt.js';
import type { RecoveryContext } from './recovery-context.js';
import type { StepContext } from './step-context.js';

export const HOOK_VERSION = '1.0';
export const HOOK_SCHEMA_VERSION = '1.0';
export const HOOK_FILE_NAME = 'hook.json';
export const HOOK_MARKDOWN_FILE_NAME = 'HOOK.md';

export interface HookEvent {
  timestamp: string;
  from_state: HookStateOrNone;
  to_state: HookStateOrNone;
  /** What caused the event, e.g. task_start, step_start, step_complete, crash_detected. */
  trigger: string;
  step_name?: string;
  details?: Record<string, unknown>;
}

export interface Hook {
  version: string;
  task_id: string;
  workspace_id: string;
  created_at: string;
  updated_at: string;
  state: HookState;
  current_step?: StepContext;
  history: HookEvent[];
  recovery?: RecoveryContext;
  checkpoints: StepCheckpoint[];
  receipts: ValidationReceipt[];
  schema_version: string;
  /** Addition (DESIGN §7): the task's never-reused key derivation index. */
  task_index?: number;
}

export interface TransitionInput {
  to: HookState;
  trigger: string;
  at: string;
  stepName?: string;
  details?: Record<string, unknown>;
}

export function newHook(taskId: string, workspaceId: string, at: string): Hook {
  const hook: Hook = {
    version: HOOK_VERSION,
    task_id: taskId,
    workspace_id: workspaceId,
    created_at: at,
    updated_at: at,
    state: 'initializing',
    history: [{ timestamp: at, from_state: '', to_state: 'initializing', trigger: 'task_start' }],
    checkpoints: [],
    receipts: [],
    schema_version: HOOK_SCHEMA_VERSION,
  };
  return hook;
}

function eventOf(from: HookStateOrNone, input: TransitionInput): HookEvent {
  const event: HookEvent = { timestamp: input.at, from_state: from, to_state: input.to, trigger: input.trigger };
  if (input.stepName !== undefined) event.step_name = input.stepName;
  if (input.details !== undefined && Object.keys(input.details).length > 0) event.details = input.details;
  return event;
}

/** Moves the hook to a new state, appending the history event; throws InvalidTransitionError. */
export function transition(hook: Hook, input: TransitionInput): Hook {
  assertTransition(hook.state, input.to);
  return {
    ...hook,
    state: input.to,
    updated_at: input.at,
    history: [...hook.history, eventOf(hook.state, input)],
  };
}

/** Appends a history event that is not a state change (e.g. a checkpoint or a receipt). */
export function recordEvent(hook: Hook, input: Omit<TransitionInput, 'to'>): Hook {
  const event = eventOf(hook.state, { ...input, to: hook.state });
  return { ...hook, updated_at: input.at, history: [...hook.history, event] };
}

export function addCheckpoint(hook: Hook, checkpoint: StepCheckpoint, maxCheckpoints: number): Hook {
  const checkpoints = pruneCheckpoints([...hook.checkpoints, checkpoint], maxCheckpoints);
  const current_step =
    hook.current_step && hook.current_step.step_index === checkpoint.step_index
      ? { ...hook.current_step, current_checkpoint_id: checkpoint.checkpoint_id }
      : hook.current_step;
  const next: Hook = { ...hook, checkpoints, updated_at: checkpoint.created_at };
  if (current_step) next.current_step = current_step;
  return next;
}

const STEP_DONE_TRIGGERS = new Set(['step_complete', 'step_skipped']);

/**
 * Index of the next step to run, derived from the append-only history: one past the highest step
 * recorded as completed or skipped. History is the source of truth, so a crash between two file
 * writes can never make the task forget or repeat a finished step.
 */
export function nextStepIndex(hook: Hook): number {
  let next = 0;
  for (const event of hook.history) {
    if (!STEP_DONE_TRIGGERS.has(event.trigger)) continue;
    const index = event.details?.['step_index'];
    if (typeof index === 'number' && index + 1 > next) next = index + 1;
  }
  return next;
}

/** When the step at `index` last started (its most recent step_start event), if it did. */
export function stepStartedAt(hook: Hook, index: number): string | undefined {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const event = hook.history[i]!;
    if (event.trigger === 'step_start' && event.details?.['step_index'] === index) return event.timestamp;
  }
  return undefined;
}

/** How a step's processes ran (local or sandbox), from its last step_complete event. */
export function stepExecutionMode(hook: Hook, stepName: string): string | undefined {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const event = hook.history[i]!;
    if (event.trigger !== 'step_complete' || event.step_name !== stepName) continue;
    const mode = event.details?.['execution'];
    return mode === 'local' || mode === 'sandbox' ? mode : undefined;
  }
  return undefined;
}

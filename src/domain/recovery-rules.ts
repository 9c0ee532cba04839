// Crash detection and the recovery recommendation (DESIGN §6, seed 003 RecoveryContext). Pure:
// every fact that needs I/O (liveness of the owner, git state) is computed by the caller.
//
// The recommendation, first rule that applies wins:
//  -. the task's working tree is missing: if no step ever started (setup was cut off), `retry_step`,
//     which creates it and continues; otherwise `manual` (nothing can run, work may be gone);
//  0. no step was running (state initializing/step_pending, or no current step): `retry_step`,
//     which for a step that never started means "continue": recovery moves the hook
//     recovering → step_pending and the runner runs the next step from its start. (`skip_step`
//     would skip a step that never ran; there is nothing to retry from a checkpoint.)
//  1. the step's work evidently finished but the transition was not recorded: `skip_step`;
//  2. the step asks a person (human) or is idempotent (analysis, planning, validation, or marked):
//     `retry_step`, even on its last attempt: a crash is not a failure of the step, and running
//     it again is safe (the runner grants the retry one extra attempt). Idempotent steps never
//     need a reset, so a checkpoint does not change this;
//  3. a step that changes things used its last attempt: `manual` (a retry would go past
//     max_attempts: the runner grants one extra attempt and fails the task if that fails too);
//  4. a clean checkpoint of this step with a commit, made after the step (attempt) started:
//     `retry_from_checkpoint`;
//  5. otherwise a step that changes things was cut off: `manual`.
import type { StepCheckpoint } from './checkpoint.js';
import type { Hook } from './hook.js';
import { nextStepIndex, stepStartedAt } from './hook.js';
import type { HookState } from './hook-state.js';
import { isTerminal } from './hook-state.js';
import type { ValidationReceipt } from './receipt.js';
import type { CrashType, RecoveryAction, RecoveryContext } from './recovery-context.js';
import type { StepContext } from './step-context.js';
import { truncateOutput } from './step-context.js';
import type { StepDefinition } from './template.js';
import { isIdempotentStep } from './template.js';

/** What the liveness check said about the task's owner (liveness/owner.ts Liveness.status). */
export type LivenessStatus = 'alive' | 'remote' | 'gone' | 'stale' | 'none';
/** The verdicts under which a task may have crashed. */
export type DeadVerdict = 'gone' | 'stale' | 'none';

/**
 * A hook with no owner.json is only judged crashed once it is this old: the runner writes
 * owner.json right after creating the hook, so a younger one is most likely just starting.
 */
export const NO_OWNER_GRACE_MS = 10_000;

/** History triggers that put a hook in awaiting_human for `atlas recover` to continue. */
export const RECOVERABLE_PAUSE_TRIGGERS: readonly string[] = ['interrupted', 'manual_recovery_required', 'cold_start_failed'];

/** Only hooks in these states can have crashed: terminal ones ended, awaiting_human waits. */
export function mayCrash(state: HookState): boolean {
  return !isTerminal(state) && state !== 'awaiting_human';
}

export function crashTypeOf(verdict: DeadVerdict): CrashType {
  return verdict === 'gone' ? 'signal' : verdict === 'stale' ? 'timeout' : 'unknown';
}

export type CrashJudgement =
  | { crashed: true; crashType: CrashType; verdict: DeadVerdict }
  | { crashed: false; why: 'ended' | 'waiting' | 'running' | 'starting' };

export interface CrashJudgementInput {
  state: HookState;
  /** hook.updated_at */
  updatedAt: string;
  liveness: LivenessStatus;
  now: number;
  graceMs?: number;
}

/** Has this task crashed? (DESIGN §6) */
export function judgeCrash(input: CrashJudgementInput): CrashJudgement {
  if (isTerminal(input.state)) return { crashed: false, why: 'ended' };
  if (input.state === 'awaiting_human') return { crashed: false, why: 'waiting' };
  switch (input.liveness) {
    case 'alive':
    case 'remote':
      return { crashed: false, why: 'running' };
    case 'gone':
    case 'stale':
      return { crashed: true, crashType: crashTypeOf(input.liveness), verdict: input.liveness };
    case 'none': {
      // `atlas recover` owns a recovering hook before it enters that state, so a recovering hook
      // without an owner was left by a recovery that ended (aborted or killed): no grace needed.
      if (input.state === 'recovering') return { crashed: true, crashType: 'unknown', verdict: 'none' };
      const age = input.now - Date.parse(input.updatedAt);
      const young = Number.isFinite(age) && age <= (input.graceMs ?? NO_OWNER_GRACE_MS);
      return young ? { crashed: false, why: 'starting' } : { crashed: true, crashType: 'unknown', verdict: 'none' };
    }
  }
}

/** The trigger of the transition that put the hook in its current state, if any. */
export function enteredStateBy(hook: Hook): { trigger: string; from: HookState | ''; details?: Record<string, unknown> } | undefined {
  for (let i = hook.history.length - 1; i >= 0; i--) {
    const e = hook.history[i]!;
    if (e.to_state === hook.state && e.from_state !== e.to_state)
      return { trigger: e.trigger, from: e.from_state, ...(e.details ? { details: e.details } : {}) };
  }
  return undefined;
}

/** Is this awaiting_human hook paused by an interrupt or a manual recovery (so `atlas recover` continues it)? */
export function isRecoverablePause(hook: Hook): boolean {
  if (hook.state !== 'awaiting_human') return false;
  const entered = enteredStateBy(hook);
  return entered !== undefined && RECOVERABLE_PAUSE_TRIGGERS.includes(entered.trigger);
}

/**
 * The state the task was really in when it stopped: the hook's state for a crash; for a paused
 * hook, the state it left for awaiting_human (through a recovery: the state before the crash).
 */
export function lastKnownState(hook: Hook): HookState {
  if (hook.state === 'recovering' && hook.recovery) return hook.recovery.last_known_state;
  if (hook.state !== 'awaiting_human') return hook.state;
  const from = enteredStateBy(hook)?.from;
  if (from === 'recovering' && hook.recovery) return hook.recovery.last_known_state;
  return from === '' || from === undefined ? hook.state : from;
}

function later(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** When the current attempt of the step began: its last step_start event or current_step.started_at, whichever is later. */
export function currentAttemptStart(hook: Hook, step: StepContext): string {
  return later(stepStartedAt(hook, step.step_index), step.started_at) ?? step.started_at;
}

export type StepPosition =
  /** No step was running: the next one (index `next`, maybe past the end) has not started. */
  | { kind: 'between'; next: number }
  /** A step was running or validating and was cut off. */
  | { kind: 'in_step'; step: StepContext; definition: StepDefinition | undefined; startedAt: string };

export function stepPosition(hook: Hook, steps: readonly StepDefinition[], state: HookState = lastKnownState(hook)): StepPosition {
  const next = nextStepIndex(hook);
  const step = hook.current_step;
  const running = state === 'step_running' || state === 'step_validating';
  // A current_step already recorded complete (or skipped) is history, not a running step.
  if (!running || !step || step.step_index < next) return { kind: 'between', next };
  return { kind: 'in_step', step, definition: steps[step.step_index], startedAt: currentAttemptStart(hook, step) };
}

function notBefore(ts: string, since: string): boolean {
  return Date.parse(ts) >= Date.parse(since);
}

/** A checkpoint whose commit holds the whole tree as it was (clean), so a reset returns exactly there. */
export function isResettable(c: StepCheckpoint): boolean {
  return typeof c.git_commit === 'string' && c.git_commit.length > 0 && !c.git_dirty;
}

/** The newest clean checkpoint with a commit of step `index` made since `since`. */
export function checkpointOfStep(hook: Hook, index: number, since: string): StepCheckpoint | undefined {
  return [...hook.checkpoints].reverse().find((c) => c.step_index === index && notBefore(c.created_at, since) && isResettable(c));
}

/**
 * The checkpoint an explicit `retry_from_checkpoint` returns to: the recommended one if any, else
 * the newest clean checkpoint with a commit, else the newest with a commit at all.
 */
export function checkpointToReturnTo(hook: Hook, steps: readonly StepDefinition[], id?: string): StepCheckpoint | undefined {
  if (id !== undefined) return hook.checkpoints.find((c) => c.checkpoint_id === id && c.git_commit);
  const pos = stepPosition(hook, steps);
  if (pos.kind === 'in_step') {
    const own = checkpointOfStep(hook, pos.step.step_index, pos.startedAt);
    if (own) return own;
  }
  const newest = [...hook.checkpoints].reverse();
  return newest.find(isResettable) ?? newest.find((c) => c.git_commit);
}

/** Reference kept in RecoveryContext.last_checkpoint_id: the last checkpoint one could return to, else the last one. */
export function lastGoodCheckpoint(hook: Hook): StepCheckpoint | undefined {
  const newest = [...hook.checkpoints].reverse();
  return newest.find(isResettable) ?? newest[0];
}

/** Evidence that a step's work finished although the hook never recorded it. */
export interface FinishedWork {
  /** For the reason shown to the user, e.g. "commit 1a2b3c4d5e6f was made at 14:42:10Z". */
  evidence: string;
}

/**
 * Evidence found in the hook itself: a step_complete checkpoint of this attempt, or (validation
 * steps) a passing receipt made during this attempt for every command. `validationCommands` is
 * the configured list used when the step names none; unknown commands prove nothing.
 */
export function finishedWorkInHook(
  hook: Hook,
  position: Extract<StepPosition, { kind: 'in_step' }>,
  validationCommands: readonly string[] = [],
): FinishedWork | undefined {
  const { step, definition, startedAt } = position;
  const done = [...hook.checkpoints]
    .reverse()
    .find((c) => c.step_index === step.step_index && c.trigger === 'step_complete' && notBefore(c.created_at, startedAt));
  if (done) return { evidence: `checkpoint ${done.checkpoint_id} marked the step complete at ${done.created_at}` };
  if (definition?.type !== 'validation') return undefined;
  const commands = definition.commands.length > 0 ? definition.commands : validationCommands;
  if (commands.length === 0) return undefined;
  const passed: ValidationReceipt[] = [];
  for (const command of new Set(commands)) {
    const latest = [...hook.receipts]
      .reverse()
      .find((r) => r.step_name === definition.name && r.command === command && notBefore(r.started_at, startedAt));
    if (latest?.exit_code !== 0) return undefined;
    passed.push(latest);
  }
  const ids = passed.map((r) => r.receipt_id).join(', ');
  return {
    evidence:
      passed.length === 1
        ? `its validation command passed after the step started (receipt ${ids})`
        : `all ${passed.length} validation commands passed after the step started (receipts ${ids})`,
  };
}

export interface RecoveryInput {
  hook: Hook;
  /** The task's step definitions (task.json). */
  steps: readonly StepDefinition[];
  /** gone → crash_type signal, stale → timeout, none → unknown. */
  liveness: DeadVerdict;
  /** RFC 3339: when the crash is detected. */
  now: string;
  /** Evidence (from the hook and git) that the cut-off step's work finished. */
  finishedWork?: FinishedWork;
  /** False when the task's working tree is gone (setup never finished, or it was removed). */
  worktreePresent?: boolean;
}

interface Recommendation {
  action: RecoveryAction;
  reason: string;
}

function quote(name: string): string {
  return `"${name}"`;
}

function idempotentWhy(def: StepDefinition): string {
  if (def.idempotent === true) return 'the template marks it idempotent';
  if (def.type === 'validation') return 'it validates and changes nothing';
  return 'its name marks it as analysis, planning or checking';
}

function recommend(input: RecoveryInput, pos: StepPosition): { rec: Recommendation; checkpoint?: StepCheckpoint } {
  const { hook, steps } = input;
  if (input.worktreePresent === false && !hook.history.some((e) => e.trigger === 'step_start')) {
    // Killed while `atlas start` set the task up: nothing ran, so the setup can simply be finished.
    return {
      rec: {
        action: 'retry_step',
        reason:
          'The task stopped while it was being set up, before its working tree was ready; no step ran. ' +
          'Recovery creates the working tree (its branch, from the commit the task started from) and runs the task from its first step.',
      },
    };
  }
  if (input.worktreePresent === false) {
    return {
      rec: {
        action: 'manual',
        reason:
          "The task's working tree is missing (its setup never finished, or the tree was removed), so no step can run. " +
          'Check the path in task.json; if the work is gone, start the task again.',
      },
    };
  }
  if (pos.kind === 'between') {
    const nextName = steps[pos.next]?.name;
    const after = pos.next > 0 && steps[pos.next - 1] ? ` after ${quote(steps[pos.next - 1]!.name)} completed` : '';
    return {
      rec: {
        action: 'retry_step',
        reason:
          nextName !== undefined
            ? `The task stopped between steps${after}; no step was cut off. Recovery continues with the next step, ${quote(nextName)}, from its start.`
            : `The task stopped${after} with every step done; recovery continues and completes it.`,
      },
    };
  }
  const { step, definition } = pos;
  const name = quote(step.step_name);
  const attempt = `attempt ${step.attempt}/${step.max_attempts}`;
  const entered = hook.state === 'awaiting_human' ? enteredStateBy(hook) : undefined;
  if (entered?.trigger === 'cold_start_failed') {
    // The agent never started: running the step again is safe (docs/lifecycle-hooks.md).
    const error = entered.details?.['error'];
    return {
      rec: {
        action: 'retry_step',
        reason:
          `The OnColdStart lifecycle hook failed before step ${name} started its agent${typeof error === 'string' ? ` (${error})` : ''}; nothing of the step ran. ` +
          'Once the hook is fixed, recovery runs the step again (OnColdStart first).',
      },
    };
  }
  if (input.finishedWork) {
    const nextName = steps[step.step_index + 1]?.name;
    return {
      rec: {
        action: 'skip_step',
        reason:
          `Step ${name} had finished its work (${input.finishedWork.evidence}) but the crash came before atlas recorded it. ` +
          `Skipping records it complete and ${nextName !== undefined ? `moves on to ${quote(nextName)}` : 'finishes the task'}.`,
      },
    };
  }
  const kind = definition ? `${definition.type} step` : 'step';
  if (definition?.type === 'human') {
    return { rec: { action: 'retry_step', reason: `Step ${name} asks a person for approval; asking again is safe.` } };
  }
  if (definition && isIdempotentStep(definition)) {
    return {
      rec: {
        action: 'retry_step',
        reason: `Step ${name} is idempotent (${idempotentWhy(definition)}): running it again from the start on the current tree is safe (${attempt} was cut off).`,
      },
    };
  }
  if (step.attempt >= step.max_attempts) {
    return {
      rec: {
        action: 'manual',
        reason:
          `Step ${name} (${kind}) was cut off on its last attempt (${attempt}); a retry would go past max_attempts ` +
          '(one extra attempt: if it fails, the task fails). ' +
          'Inspect the working tree (git status, git diff): skip_step if its work is done, otherwise fix it by hand and skip, or retry it once more.',
      },
    };
  }
  const checkpoint = checkpointOfStep(hook, step.step_index, pos.startedAt);
  if (checkpoint) {
    return {
      checkpoint,
      rec: {
        action: 'retry_from_checkpoint',
        reason:
          `Step ${name} (${kind}) changes the working tree and was cut off (${attempt}), but checkpoint ${checkpoint.checkpoint_id} ` +
          `(${checkpoint.trigger}: ${quote(checkpoint.description)}) was made during it at ${checkpoint.created_at} on commit ${checkpoint.git_commit!.slice(0, 12)}. ` +
          'Retrying from it resets the tree to that commit, after saving every uncommitted change on an atlas/recovery/ branch.',
      },
    };
  }
  const dirtyOnly = hook.checkpoints.some(
    (c) => c.step_index === step.step_index && notBefore(c.created_at, pos.startedAt) && c.git_commit,
  );
  return {
    rec: {
      action: 'manual',
      reason:
        `Step ${name} (${kind}) changes the working tree and was cut off mid-way (${attempt}) ` +
        (dirtyOnly
          ? 'and its checkpoints since it started hold uncommitted changes that a reset would not restore'
          : 'with no checkpoint since it started') +
        ', so atlas cannot tell how far it got. Inspect the working tree (git status, git diff), then choose retry_step (run it again on the current tree)' +
        (hook.checkpoints.some((c) => c.git_commit)
          ? ', skip_step (its work is done) or retry_from_checkpoint (return to an earlier checkpoint).'
          : ' or skip_step (its work is done).'),
    },
  };
}

/** Fills the RecoveryContext for a crashed (or paused) hook. */
export function diagnoseCrash(input: RecoveryInput): RecoveryContext {
  const { hook } = input;
  const state = lastKnownState(hook);
  const pos = stepPosition(hook, input.steps, state);
  const { rec, checkpoint } = recommend(input, pos);
  const ctx: RecoveryContext = {
    detected_at: input.now,
    crash_type: crashTypeOf(input.liveness),
    last_known_state: state,
    was_validating: state === 'step_validating',
    recommended_action: rec.action,
    reason: rec.reason,
  };
  const step = hook.current_step;
  if (pos.kind === 'in_step' && step) {
    if (ctx.was_validating && step.working_on) ctx.validation_cmd = step.working_on;
    if (step.last_output) ctx.partial_output = truncateOutput(step.last_output);
  }
  const last = checkpoint ?? lastGoodCheckpoint(hook);
  if (last) ctx.last_checkpoint_id = last.checkpoint_id;
  return ctx;
}

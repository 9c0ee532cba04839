// One attempt at one step: the hook walks step_pending → step_running (→ step_validating) and
// then to step_pending (done, or retry), awaiting_human (approval, ask, interrupt) or failed.
// current_step is kept up to date while it runs and cleared when the step completes.
import { readFileSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import { AtlasError } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import type { HookState } from '../domain/hook-state.js';
import type { StepContext } from '../domain/step-context.js';
import type { Task } from '../domain/task.js';
import type { StepDefinition } from '../domain/template.js';
import { isIdempotentStep } from '../domain/template.js';
import type { ProcessExecutor } from '../exec/types.js';
import { createCheckpoint } from '../hook/checkpoint.js';
import { startIntervalCheckpoints } from '../hook/interval-checkpointer.js';
import type { HookManager } from '../hook/manager.js';
import { coldStartReason, runColdStart } from '../lifecycle/cold-start.js';
import type { LifecycleBus } from '../lifecycle/types.js';
import type { Reporter, TaskOutcome } from './contract.js';
import { runAiStep } from './executors/ai.js';
import { runCommandStep } from './executors/command.js';
import { runGitStep } from './executors/git.js';
import { runHumanStep } from './executors/human.js';
import type { StepResult, StepRunContext } from './executors/types.js';
import { runValidationStep } from './executors/validation.js';
import { changedPaths, watchChangedFiles } from './files-watch.js';
import type { InterruptWatch } from './interrupts.js';
import {
  approvalOutcome,
  askOutcome,
  coldStartFailedOutcome,
  failedOutcome,
  interruptedOutcome,
  pausedOutcome,
  rejectedOutcome,
} from './outcome.js';
import type { ProcessGroups } from './processes.js';
import { fillPlaceholders } from './prompt.js';
import { countStepStarts, defaultRetryNote } from './retry-note.js';
import { StepProgress } from './step-progress.js';
import type { ValidationRecorder } from './validation-recorder.js';
import { afterSandboxedStep } from './wall.js';

/** What the runner shares with each step attempt. */
export interface RunState {
  manager: HookManager;
  task: Task;
  home: string;
  config: Config;
  reporter: Reporter;
  groups: ProcessGroups;
  /** How the step's processes start: locally or in the task's sandbox (execution.mode). */
  executor: ProcessExecutor;
  interrupts: InterruptWatch;
  interactive: boolean;
  validationRecorder?: ValidationRecorder | undefined;
  /** The lifecycle points around agent runs (builtins recording conversations, user commands). */
  lifecycle: LifecycleBus;
  /** OnColdStart has run in this process (it runs before the first agent step a process runs). */
  coldStarted: boolean;
  /** A state transition with its history event; task.json's status mirror follows. */
  move(
    to: HookState,
    trigger: string,
    stepName: string | undefined,
    details?: Record<string, unknown>,
    change?: (hook: Hook) => Hook,
  ): Promise<Hook>;
}

export type AttemptResult = { kind: 'completed' } | { kind: 'retry' } | { kind: 'stop'; outcome: TaskOutcome };

export function withoutCurrentStep(hook: Hook): Hook {
  const { current_step: _dropped, ...rest } = hook;
  return rest;
}

function errorDetails(error: unknown): { message: string; hint?: string } {
  if (error instanceof AtlasError) return { message: error.message, ...(error.hint ? { hint: error.hint } : {}) };
  return { message: error instanceof Error ? error.message : String(error) };
}

async function execute(ctx: StepRunContext): Promise<StepResult> {
  const step = ctx.step;
  switch (step.type) {
    case 'ai':
      return runAiStep({ ...ctx, step });
    case 'command':
      return runCommandStep({ ...ctx, step });
    case 'validation':
      return runValidationStep({ ...ctx, step });
    case 'git':
      return runGitStep({ ...ctx, step });
    case 'human':
      return runHumanStep({ ...ctx, step });
  }
}

/** How often a running step's changed files are looked up (git status). */
const FILES_POLL_MS = 2000;

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Records a step as done: a step_complete checkpoint, then step_complete with current_step cleared. */
export async function completeStep(run: RunState, index: number, details: Record<string, unknown>, summary?: string): Promise<void> {
  const step = run.task.steps[index]!;
  try {
    const checkpoint = await createCheckpoint(run.manager, {
      description: `step ${step.name} complete${summary ? `: ${summary}` : ''}`,
      trigger: 'step_complete',
    });
    run.reporter.note(`checkpoint ${checkpoint.checkpoint_id} (step_complete)`);
  } catch (error) {
    run.reporter.note(`could not record the step_complete checkpoint: ${errorDetails(error).message}`);
  }
  await run.move('step_pending', 'step_complete', step.name, { step_index: index, ...details }, (hook) => endStep(hook, index));
}

/**
 * Clears current_step after its step_complete event. Its output's tail goes into that event: a
 * board following hook.json from another process then still gets the output of a step that ended
 * between two of its looks.
 */
function endStep(hook: Hook, index: number): Hook {
  const output = hook.current_step?.step_index === index ? hook.current_step.last_output : undefined;
  const ended = withoutCurrentStep(hook);
  const event = hook.history.at(-1);
  if (!output || event?.trigger !== 'step_complete') return ended;
  return { ...ended, history: [...hook.history.slice(0, -1), { ...event, details: { ...event.details, last_output: output } }] };
}

export async function runStepAttempt(
  run: RunState,
  index: number,
  options: { note?: string | undefined; fromCheckpoint?: string | undefined } = {},
): Promise<AttemptResult> {
  const { task, manager, reporter } = run;
  const step: StepDefinition = task.steps[index]!;
  const before = manager.read();
  const attempt = countStepStarts(before, index) + 1;
  const maxAttempts = Math.max(step.max_attempts, attempt);
  const previous = before.current_step?.step_index === index ? before.current_step : undefined;
  const startedAt = manager.timestamp();

  const context: StepContext = {
    step_name: step.name,
    step_index: index,
    started_at: startedAt,
    attempt,
    max_attempts: maxAttempts,
    working_on: step.description ?? `${step.type} step ${step.name}`,
    ...(previous?.files_touched?.length ? { files_touched: previous.files_touched } : {}),
    ...(previous?.agent_session_id ? { agent_session_id: previous.agent_session_id } : {}),
  };
  // HOOK.md still describes how the last attempt ended; the step_start below rewrites it.
  const brief = attempt > 1 && step.type === 'ai' ? readOptional(manager.files.hookMarkdown) : undefined;
  const retry =
    attempt > 1
      ? {
          ...(previous?.agent_session_id ? { sessionId: previous.agent_session_id } : {}),
          note: options.note ?? defaultRetryNote(before, step, index, attempt),
          ...(brief !== undefined ? { brief } : {}),
        }
      : undefined;
  await run.move(
    'step_running',
    'step_start',
    step.name,
    { step_index: index, attempt, ...(options.fromCheckpoint ? { from_checkpoint: options.fromCheckpoint } : {}) },
    (hook) => ({ ...hook, current_step: context }),
  );
  reporter.stepStarted({ index, name: step.name, type: step.type, attempt, maxAttempts });
  const started = Date.now();

  if (step.type === 'ai' && !run.coldStarted && !run.interrupts.signal) {
    const failure = await runColdStart(run.lifecycle, {
      task,
      taskDir: manager.ref.dir,
      stepName: step.name,
      attempt,
      reason: coldStartReason(before, task),
    });
    if (failure) {
      // The agent never started: the step waits (recoverable), and says which hook failed and why.
      const error = failure.error.message;
      await run.move('awaiting_human', 'cold_start_failed', step.name, {
        step_index: index,
        attempt,
        error,
        ...(failure.movedTo ? { moved_aside: failure.moved, moved_to: failure.movedTo } : {}),
      });
      reporter.stepFinished({
        index,
        name: step.name,
        ok: false,
        durationMs: Date.now() - started,
        summary: 'OnColdStart failed; the agent did not start',
      });
      return {
        kind: 'stop',
        outcome: coldStartFailedOutcome(task, index, error, failure.movedTo ? { paths: failure.moved, to: failure.movedTo } : undefined),
      };
    }
    run.coldStarted = true;
  }

  const progress = new StepProgress(manager, index, 2000, (error) =>
    reporter.note(`could not update the hook: ${errorDetails(error).message}`),
  );
  const interval = startIntervalCheckpoints(
    manager,
    run.config.hooks.checkpoint_interval,
    () => `${step.name} in progress (attempt ${attempt}/${maxAttempts})${progress.currentWork ? `: ${progress.currentWork}` : ''}`,
    (error) => reporter.note(`interval checkpoint failed: ${errorDetails(error).message}`),
  );
  // The sandbox looks at the worktree's protected files again for this step (once, not per command).
  run.executor.beginStep?.();
  const tracksFiles = step.type === 'ai' || step.type === 'command';
  const changedBefore = tracksFiles ? await changedPaths(task.worktree) : undefined;
  const filesWatch = tracksFiles
    ? watchChangedFiles(task.worktree, changedBefore, FILES_POLL_MS, (paths) => progress.addFiles(paths))
    : undefined;
  const ctx: StepRunContext = {
    task,
    taskDir: manager.ref.dir,
    home: run.home,
    step,
    index,
    attempt,
    maxAttempts,
    manager,
    config: run.config,
    reporter,
    progress,
    groups: run.groups,
    executor: run.executor,
    interrupts: run.interrupts,
    interactive: run.interactive,
    lifecycle: run.lifecycle,
    env: {
      ...process.env,
      ATLAS_HOME: run.home,
      ATLAS_TASK_ID: task.id,
      ATLAS_STEP: step.name,
      ATLAS_WORKTREE: task.worktree,
      ATLAS_BRANCH: task.branch,
      ATLAS_DESCRIPTION: task.description,
    },
    ...(retry ? { retry } : {}),
    ...(run.validationRecorder ? { validationRecorder: run.validationRecorder } : {}),
    enterValidating: async (details) => {
      await run.move('step_validating', 'validation_start', step.name, { step_index: index, attempt, ...details });
    },
    fill: (text) => fillPlaceholders(text, task, manager.ref.dir),
  };

  let result: StepResult;
  try {
    // A signal that came between two steps stops the run before this one does anything.
    result = run.interrupts.signal ? { status: 'failed', error: 'interrupted before it started' } : await execute(ctx);
  } catch (error) {
    const { message, hint } = errorDetails(error);
    result = { status: 'failed', error: message, permanent: true, ...(hint ? { hint } : {}) };
  }
  // Before atlas reads the task's git again: the step's objects cross the wall, verified.
  if (run.executor.mode === 'sandbox') result = await afterSandboxedStep(run, index, result);
  await interval.stop();
  const changed = filesWatch ? await filesWatch.stop() : [];
  await progress.stop();
  // Recovery re-runs idempotent steps from the start, trusting they changed nothing: say when one did.
  if (changed.length > 0 && isIdempotentStep(step) && result.status === 'ok') {
    const flag = `⚠ idempotent step changed ${changed.length} file(s)`;
    result = {
      ...result,
      summary: result.summary ? `${result.summary}, ${flag}` : flag,
      details: { ...result.details, idempotent_changed_files: changed.slice(0, 100) },
    };
    reporter.note(
      `warning: step ${step.name} is idempotent (recovery re-runs it from the start) but changed ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ', …' : ''}`,
    );
  }
  const durationMs = Date.now() - started;

  const signal = run.interrupts.signal;
  if (signal) {
    const kept = result.status === 'failed' || result.status === 'ok' ? result.details : undefined;
    await run.move('awaiting_human', 'interrupted', step.name, { ...kept, signal, step_index: index, attempt });
    reporter.stepFinished({ index, name: step.name, ok: false, durationMs, summary: `interrupted (${signal})` });
    return { kind: 'stop', outcome: interruptedOutcome(task, index, signal) };
  }

  switch (result.status) {
    case 'ok':
      reporter.stepFinished({ index, name: step.name, ok: true, durationMs, ...(result.summary ? { summary: result.summary } : {}) });
      await completeStep(run, index, { attempt, execution: run.executor.mode, ...result.details }, result.summary);
      return { kind: 'completed' };
    case 'waiting': {
      const trigger = result.reason === 'approval' ? 'human_approval_required' : 'human_paused';
      await run.move('awaiting_human', trigger, step.name, { step_index: index, ...result.details });
      reporter.stepFinished({
        index,
        name: step.name,
        ok: false,
        waiting: true,
        durationMs,
        summary: result.reason === 'approval' ? 'waiting for approval' : 'stopped for now',
      });
      return {
        kind: 'stop',
        outcome: result.reason === 'approval' ? approvalOutcome(task, index, result.prompt) : pausedOutcome(task, index),
      };
    }
    case 'rejected':
      await run.move('failed', 'human_rejected', step.name, { step_index: index, ...(result.note ? { note: result.note } : {}) });
      reporter.stepFinished({ index, name: step.name, ok: false, durationMs, summary: 'rejected' });
      return { kind: 'stop', outcome: rejectedOutcome(task, index) };
    case 'failed': {
      const error = result.error;
      if (!result.permanent && attempt < maxAttempts) {
        await run.move('step_pending', 'step_retry', step.name, { ...result.details, step_index: index, attempt, error });
        reporter.stepFinished({
          index,
          name: step.name,
          ok: false,
          durationMs,
          summary: `${error} — retrying (attempt ${attempt + 1}/${maxAttempts})`,
        });
        return { kind: 'retry' };
      }
      const ask = step.on_failure === 'ask';
      await run.move(ask ? 'awaiting_human' : 'failed', 'step_failed', step.name, {
        ...result.details,
        step_index: index,
        attempt,
        error,
        on_failure: step.on_failure,
        ...(result.hint ? { hint: result.hint } : {}),
      });
      reporter.stepFinished({ index, name: step.name, ok: false, durationMs, summary: error });
      return { kind: 'stop', outcome: ask ? askOutcome(task, index, error, result.hint) : failedOutcome(task, index, error, result.hint) };
    }
  }
}

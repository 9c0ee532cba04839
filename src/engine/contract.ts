// How a task run is entered and what it returns. The runner (run-task.ts) implements this;
// start, resume and recover call it.
import type { Config } from '../config/schema.js';
import type { ExitCode } from '../domain/errors.js';
import type { HookState } from '../domain/hook-state.js';
import type { ReceiptStatusFn } from '../hook/manager.js';
import type { LifecycleBuiltins } from '../lifecycle/bus.js';
import type { TaskRef } from '../store/task-store.js';
import type { ValidationRecorder } from './validation-recorder.js';

/**
 * Where the runner picks the task up:
 * - start: a new hook in `initializing`;
 * - continue: the hook is in step_pending (or awaiting_human after a pause): run the next step;
 * - retry_step: run the hook's current step again with attempt + 1; past max_attempts it gets that
 *   one attempt (the limit is raised to it) and no automatic retries: if it fails, the task fails;
 *   `note` tells the agent what happened (for an AI step that resumes its session);
 * - skip_step: record the current step as complete (trigger step_skipped) and continue;
 * - approve / reject: answer a human step that is waiting.
 */
export type EntryDirective =
  | { kind: 'start' }
  | { kind: 'continue' }
  | { kind: 'retry_step'; note?: string; fromCheckpoint?: string }
  | { kind: 'skip_step'; note?: string }
  | { kind: 'approve'; note?: string }
  | { kind: 'reject'; note?: string };

/** How a step's run ended, for the progress line. */
export interface StepFinishedInfo {
  index: number;
  name: string;
  ok: boolean;
  /** Not ok, but not a failure either: the step waits for a person (an approval, a pause). */
  waiting?: boolean;
  durationMs: number;
  summary?: string;
}

export interface TaskOutcome {
  state: HookState;
  exitCode: ExitCode;
  /** For the user: what happened and, if not completed, what to do next (one line, or a few when a person must read something). */
  message: string;
  /** A human step waits: what the person is asked to approve. */
  prompt?: string;
}

/** Live progress. The runner reports; the CLI renders (TTY: live line; otherwise plain lines). */
export interface Reporter {
  taskStarted(info: { taskId: string; description: string; worktree: string; branch: string; steps: number }): void;
  stepStarted(info: { index: number; name: string; type: string; attempt: number; maxAttempts: number }): void;
  /** Output of the agent or command as it comes (already decoded text, may be partial lines). */
  output(text: string, stream: 'stdout' | 'stderr'): void;
  /** Short status from the runner (e.g. "checkpoint ckpt-1234abcd", "agent: editing src/x.ts"). */
  note(text: string): void;
  stepFinished(info: StepFinishedInfo): void;
  taskFinished(outcome: TaskOutcome): void;
  /** Stop any live rendering (before prompting or exiting). */
  close(): void;
}

export interface RunTaskOptions {
  ref: TaskRef;
  config: Config;
  reporter: Reporter;
  /** Human steps may prompt on this terminal; otherwise they wait in awaiting_human. */
  interactive: boolean;
  entry: EntryDirective;
  /** Records proof of each validation command (signed receipts); absent: artifacts only. */
  validationRecorder?: ValidationRecorder;
  /** Verification status of receipts for HOOK.md while the task runs (crypto layer); absent: not shown. */
  receiptStatuses?: ReceiptStatusFn;
  /**
   * Lifecycle hooks (docs/lifecycle-hooks.md): builtins other layers add (run after the recording
   * defaults, e.g. workspace sync's restore and push), and `--verbose` (show every hook run).
   */
  lifecycle?: { builtins?: LifecycleBuiltins; verbose?: boolean };
}

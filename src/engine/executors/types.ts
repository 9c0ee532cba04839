// What a step executor receives and returns. The runner (run-step.ts) owns the hook's state
// transitions; executors do the work and report through the context.
import type { Config } from '../../config/schema.js';
import type { Task } from '../../domain/task.js';
import type { StepDefinition } from '../../domain/template.js';
import type { ProcessExecutor } from '../../exec/types.js';
import type { HookManager } from '../../hook/manager.js';
import type { LifecycleBus } from '../../lifecycle/types.js';
import type { Reporter } from '../contract.js';
import type { InterruptWatch } from '../interrupts.js';
import type { ProcessGroups } from '../processes.js';
import type { StepProgress } from '../step-progress.js';
import type { ValidationRecorder } from '../validation-recorder.js';

export interface StepRunContext<S extends StepDefinition = StepDefinition> {
  task: Task;
  taskDir: string;
  /** ATLAS_HOME. */
  home: string;
  step: S;
  index: number;
  /** 1-based. */
  attempt: number;
  maxAttempts: number;
  manager: HookManager;
  config: Config;
  reporter: Reporter;
  progress: StepProgress;
  groups: ProcessGroups;
  /** Starts the step's processes (local or sandboxed): pass it to every runProcess. */
  executor: ProcessExecutor;
  interrupts: InterruptWatch;
  interactive: boolean;
  /** Environment for the step's processes (process env plus ATLAS_TASK_ID, ATLAS_STEP, ...). */
  env: NodeJS.ProcessEnv;
  /**
   * Set when this attempt continues an earlier one (retry, resume after interrupt or crash).
   * `brief`: HOOK.md as it was before this attempt started (it describes the crash).
   */
  retry?: { sessionId?: string; note: string; brief?: string };
  /** The lifecycle points around agent runs (OnMessage, OnStreamFinish, ...). */
  lifecycle: LifecycleBus;
  validationRecorder?: ValidationRecorder;
  /** Moves the hook step_running → step_validating (validation steps). */
  enterValidating(details?: Record<string, unknown>): Promise<void>;
  /** Fills {{description}}, {{task_id}}, {{branch}}, {{worktree}}, {{outputs.<step>}}. */
  fill(text: string): string;
}

export type StepResult =
  | { status: 'ok'; summary?: string; details?: Record<string, unknown> }
  /** `permanent`: retrying cannot help (configuration problem); no further attempts. `details` go in the hook's event. */
  | { status: 'failed'; error: string; permanent?: boolean; hint?: string; details?: Record<string, unknown> }
  /** The step waits for a person: approval required, or the person chose to stop for now. */
  | {
      status: 'waiting';
      reason: 'approval' | 'paused' /** What the person is asked (human steps). */;
      prompt?: string;
      details?: Record<string, unknown>;
    }
  | { status: 'rejected'; note?: string };

export type StepExecutor<S extends StepDefinition = StepDefinition> = (ctx: StepRunContext<S>) => Promise<StepResult>;

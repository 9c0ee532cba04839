// The task runner: takes a task's hook from where the entry directive says, runs the remaining
// steps in order and returns the outcome. Start, resume and recover all enter here.
// While it runs the task has a live owner (owner.json + heartbeat), Ctrl+C/SIGTERM stop the
// step's processes and park the hook in awaiting_human, and every state change is in history.
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { nextStepIndex } from '../domain/hook.js';
import type { HookState } from '../domain/hook-state.js';
import { InvalidTransitionError, isTerminal } from '../domain/hook-state.js';
import type { Task } from '../domain/task.js';
import type { TaskExecution } from '../exec/task-executor.js';
import { createTaskExecutor, describeExecution, describeModeChange } from '../exec/task-executor.js';
import type { ProcessExecutor } from '../exec/types.js';
import { crossBeforeGit } from '../git/cross-objects.js';
import { HookManager } from '../hook/manager.js';
import type { LifecycleRunner } from '../lifecycle/bus.js';
import { composeBuiltins, recordingBuiltins } from '../lifecycle/defaults.js';
import { baseEvent, lifecycleBusForTask } from '../lifecycle/for-task.js';
import { checkLiveness, readOwner, startHeartbeat } from '../liveness/owner.js';
import { approvePending, readControlRecord } from '../store/control-record.js';
import { withLock } from '../store/lock.js';
import { taskFiles } from '../store/paths.js';
import { readTask } from '../store/task-store.js';
import { syncBuiltins } from '../sync/lifecycle-builtins.js';
import type { EntryDirective, RunTaskOptions, TaskOutcome } from './contract.js';
import { reviewLines, signControlReview } from './control-receipt.js';
import { assertExecutionReady } from './execution-mode.js';
import { InterruptWatch } from './interrupts.js';
import { completedOutcome, failedOutcome, rejectedOutcome } from './outcome.js';
import { ProcessGroups } from './processes.js';
import type { RunState } from './run-step.js';
import { completeStep, runStepAttempt, withoutCurrentStep } from './run-step.js';

const ENTRY_STATES: Record<EntryDirective['kind'], readonly HookState[]> = {
  start: ['initializing'],
  continue: ['step_pending', 'awaiting_human', 'recovering'],
  retry_step: ['step_pending', 'awaiting_human', 'recovering'],
  skip_step: ['step_pending', 'awaiting_human', 'recovering'],
  approve: ['awaiting_human'],
  reject: ['awaiting_human'],
};

/** The step a directive acts on: the active one if it has not completed, else the next one. */
function targetStep(hook: Hook): number {
  const next = nextStepIndex(hook);
  const current = hook.current_step?.step_index;
  return current !== undefined && current >= next ? current : next;
}

function assertEntry(entry: EntryDirective, hook: Hook, task: Task): void {
  const allowed = ENTRY_STATES[entry.kind];
  if (allowed.includes(hook.state)) return;
  const ended = isTerminal(hook.state);
  throw new AtlasError(`task ${task.id} is ${hook.state}; "${entry.kind.replace('_', ' ')}" needs it to be ${allowed.join(' or ')}`, {
    exitCode: ended ? EXIT.failure : EXIT.input,
    hint: ended
      ? 'the task has ended; start a new one with `atlas start`'
      : `run \`atlas hook status --task ${task.id}\` to see where it is`,
  });
}

function assertNotRunningElsewhere(ownerPath: string, task: Task): void {
  const liveness = checkLiveness(readOwner(ownerPath));
  if (liveness.status === 'alive' || liveness.status === 'remote') {
    if (liveness.owner.pid === process.pid && liveness.status === 'alive') return;
    throw new AtlasError(`task ${task.id} is already being run by process ${liveness.owner.pid} on ${liveness.owner.host}`, {
      exitCode: EXIT.failure,
      hint: 'wait for it to finish or stop it (Ctrl+C in its terminal); `atlas status` shows what it is doing',
    });
  }
}

/** <home>/workspaces/<workspace>/tasks/<id> → <home>. */
function homeOf(taskDir: string): string {
  return dirname(dirname(dirname(dirname(taskDir))));
}

class TaskRun implements RunState {
  readonly manager: HookManager;
  readonly task: Task;
  readonly home: string;
  readonly config: RunTaskOptions['config'];
  readonly reporter: RunTaskOptions['reporter'];
  readonly groups = new ProcessGroups();
  readonly interrupts: InterruptWatch;
  readonly interactive: boolean;
  readonly validationRecorder: RunTaskOptions['validationRecorder'];
  readonly executor: ProcessExecutor;
  readonly lifecycle: LifecycleRunner;
  coldStarted = false;

  constructor(options: RunTaskOptions, task: Task, executor: ProcessExecutor, onForce: () => void) {
    this.task = task;
    this.executor = executor;
    this.config = options.config;
    this.reporter = options.reporter;
    this.interactive = options.interactive;
    this.validationRecorder = options.validationRecorder;
    this.home = homeOf(options.ref.dir);
    this.manager = new HookManager(options.ref, {
      maxCheckpoints: options.config.hooks.max_checkpoints,
      ...(options.receiptStatuses ? { receiptStatuses: options.receiptStatuses } : {}),
    });
    this.lifecycle = lifecycleBusForTask({
      task,
      config: options.config,
      groups: this.groups,
      reporter: options.reporter,
      // Workspace sync (docs/sync.md) after the recording defaults: a push sees the closed conversation.
      builtins: composeBuiltins(
        recordingBuiltins(),
        syncBuiltins(this.home, options.config, (t) => options.reporter.note(t)),
        options.lifecycle?.builtins,
      ),
      verbose: Boolean(options.lifecycle?.verbose),
    });
    this.interrupts = new InterruptWatch(this.groups, {
      first: (signal) => this.reporter.note(`${signal} received: stopping the step (press Ctrl+C again to force)`),
      force: onForce,
    });
  }

  /** A state change with its history event (HookManager also mirrors the state into task.json). */
  async move(
    to: HookState,
    trigger: string,
    stepName: string | undefined,
    details?: Record<string, unknown>,
    change?: (hook: Hook) => Hook,
  ): Promise<Hook> {
    return this.manager.transition(
      { to, trigger, ...(stepName !== undefined ? { stepName } : {}), ...(details ? { details } : {}) },
      change,
    );
  }

  /** Runs the step at `index` until it completes (undefined) or the run must stop (outcome). */
  private async runStep(index: number, note?: string, fromCheckpoint?: string): Promise<TaskOutcome | undefined> {
    let first = true;
    for (;;) {
      const result = await runStepAttempt(this, index, first ? { note, fromCheckpoint } : {});
      first = false;
      if (result.kind === 'completed') return undefined;
      if (result.kind === 'stop') return result.outcome;
    }
  }

  /** Runs every remaining step, then completes the task. */
  private async runRemaining(): Promise<TaskOutcome> {
    for (;;) {
      const hook = this.manager.read();
      const index = nextStepIndex(hook);
      if (index >= this.task.steps.length) {
        if (hook.state !== 'step_pending') await this.move('step_pending', 'resumed', undefined, { step_index: index });
        await this.move('completed', 'all_steps_complete', undefined, { steps: this.task.steps.length }, withoutCurrentStep);
        return completedOutcome(this.task);
      }
      const stopped = await this.runStep(index);
      if (stopped) return stopped;
    }
  }

  async run(entry: EntryDirective): Promise<TaskOutcome> {
    const hook = this.manager.read();
    assertEntry(entry, hook, this.task);
    if (entry.kind !== 'reject' && !existsSync(this.task.worktree)) {
      throw new AtlasError(`the working tree of task ${this.task.id} is missing: ${this.task.worktree}`, {
        exitCode: EXIT.failure,
        hint: `restore it (git -C ${this.task.repo_root} worktree add ${this.task.worktree} ${this.task.branch}), or run atlas abandon --task ${this.task.id}`,
      });
    }
    const index = targetStep(hook);
    switch (entry.kind) {
      case 'start':
        await this.move('step_pending', 'setup_complete', undefined, { steps: this.task.steps.length });
        return this.runRemaining();
      case 'continue':
        return this.runRemaining();
      case 'retry_step': {
        if (index >= this.task.steps.length) return this.runRemaining();
        const stopped = await this.runStep(index, entry.note, entry.fromCheckpoint);
        return stopped ?? this.runRemaining();
      }
      case 'skip_step': {
        if (index >= this.task.steps.length) return this.runRemaining();
        const step = this.task.steps[index]!;
        const details = { step_index: index, ...(entry.note ? { note: entry.note } : {}) };
        if (hook.state === 'step_pending') {
          // Already between steps: record the skip without a state change.
          await this.manager.event({ trigger: 'step_skipped', stepName: step.name, details }, withoutCurrentStep);
        } else {
          await this.move('step_pending', 'step_skipped', step.name, details, withoutCurrentStep);
        }
        this.reporter.note(`skipped step ${index + 1} "${step.name}"`);
        return this.runRemaining();
      }
      case 'approve': {
        if (index >= this.task.steps.length) return this.runRemaining();
        const step = this.task.steps[index]!;
        this.reporter.note(`step ${index + 1} "${step.name}" approved`);
        const reviewed = approvePending(this.manager.ref.dir);
        if (reviewed.length > 0) {
          this.reporter.note(`control changes approved: ${reviewed.join('; ')}`);
          const record = readControlRecord(this.manager.ref.dir);
          // Every finding the template does not allow was approved just now, or earlier.
          const lines = reviewLines(record?.findings ?? [], record?.allowed ?? [], new Set((record?.findings ?? []).map((f) => f.key)));
          await signControlReview({
            manager: this.manager,
            task: this.task,
            recorder: this.validationRecorder,
            stepIndex: index,
            exitCode: 0,
            lines,
          });
        }
        await completeStep(this, index, { decision: 'approved', ...(entry.note ? { note: entry.note } : {}) }, 'approved');
        return this.runRemaining();
      }
      case 'reject': {
        const step = this.task.steps[Math.min(index, this.task.steps.length - 1)];
        await this.move('failed', 'human_rejected', step?.name, { step_index: index, ...(entry.note ? { note: entry.note } : {}) });
        return rejectedOutcome(this.task, index);
      }
    }
  }
}

export async function runTask(options: RunTaskOptions): Promise<TaskOutcome> {
  // Sandbox mode without a usable sandbox stops before the task is claimed or anything runs.
  await assertExecutionReady(options.config);
  const files = taskFiles(options.ref.dir);
  const task = readTask(options.ref.dir);
  // Check and claim under one lock: two `atlas resume` racing cannot both run the task.
  const heartbeat = await withLock(files.owner, () => {
    assertNotRunningElsewhere(files.owner, task);
    return startHeartbeat(files.owner, {
      heartbeatIntervalMs: options.config.hooks.heartbeat_interval,
      staleThresholdMs: options.config.hooks.stale_threshold,
    });
  });
  let execution: TaskExecution;
  try {
    // What a killed run's last step wrote crosses (verified) before anything reads the task's git.
    await crossBeforeGit(options.ref.dir);
    execution = await createTaskExecutor({ task, taskDir: options.ref.dir, home: homeOf(options.ref.dir), config: options.config });
  } catch (error) {
    heartbeat.stop();
    throw error;
  }
  const run = new TaskRun(options, task, execution.executor, () => {
    // Second Ctrl+C: leave now. The hook may still say step_running; `atlas recover` sorts it out.
    // owner.json stays: it names this process, which is about to be gone, so the task is judged
    // crashed at once (without it, recovery would wait out the grace for an ownerless hook).
    options.reporter.close();
    process.stderr.write(`\natlas: forced exit; the task can be continued with atlas recover --task ${task.id}\n`);
    process.exit(EXIT.interrupted);
  });
  // A SIGKILL of this process leaves the step's process groups running: owner.json names them so
  // that recovery can stop them before it runs the step again.
  run.groups.onChange = (pids) => heartbeat.setProcessGroups(pids);
  run.interrupts.install();
  try {
    options.reporter.taskStarted({
      taskId: task.id,
      description: task.description,
      worktree: task.worktree,
      branch: task.branch,
      steps: task.steps.length,
    });
    const sandboxed = describeExecution(execution.record) ?? describeModeChange(execution);
    if (sandboxed) options.reporter.note(sandboxed);
    let outcome: TaskOutcome;
    let terminatedElsewhere = false;
    try {
      outcome = await run.run(options.entry);
    } catch (error) {
      if (!(error instanceof InvalidTransitionError)) throw error;
      // Someone else moved the hook (e.g. `atlas abandon` from another terminal): stop here.
      run.groups.terminateAll();
      const state = run.manager.read().state;
      const index = targetStep(run.manager.read());
      outcome = { ...failedOutcome(task, index, `the hook was moved to ${state} by another process (${error.message})`), state };
      // That process (e.g. atlas abandon) runs OnTerminate itself.
      terminatedElsewhere = true;
    }
    if (!terminatedElsewhere && (outcome.state === 'completed' || outcome.state === 'failed')) {
      const hook = run.manager.read();
      const stepName = hook.history[hook.history.length - 1]?.step_name ?? null;
      await run.lifecycle.terminate({ ...baseEvent(task, options.ref.dir, stepName), point: 'on_terminate', reason: outcome.state });
    }
    await run.lifecycle.idle();
    options.reporter.taskFinished(outcome);
    return outcome;
  } finally {
    run.interrupts.uninstall();
    run.groups.terminateAll();
    heartbeat.stop();
    await execution.release();
  }
}

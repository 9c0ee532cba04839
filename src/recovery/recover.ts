// `atlas recover` without the CLI: diagnose (if not done yet), take the chosen action (or the
// recommendation), then hand the task to the runner through the injected `resume` callback, which
// runs it to the end in this process. The runner does the rest: attempts, max_attempts, agent
// session resume, receipts.
//
// How each action reaches the runner:
//  - retry_step, a step was cut off      → resume({kind: 'retry_step', note})
//  - retry_step, between steps           → hook recovering/awaiting_human → step_pending, resume({kind: 'continue'})
//  - retry_from_checkpoint               → save uncommitted work on atlas/recovery/<task>/<time>, reset the tree
//                                          to the checkpoint's commit, resume({kind: 'retry_step', fromCheckpoint, note})
//  - skip_step                           → resume({kind: 'skip_step', note})
//  - manual                              → hook recovering → awaiting_human (manual_recovery_required), exit 5
import { existsSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import type { StepCheckpoint } from '../domain/checkpoint.js';
import type { ExitCode } from '../domain/errors.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { HookState } from '../domain/hook-state.js';
import type { RecoveryAction, RecoveryContext } from '../domain/recovery-context.js';
import { isRecoveryAction, RECOVERY_ACTIONS } from '../domain/recovery-context.js';
import { checkpointToReturnTo } from '../domain/recovery-rules.js';
import type { EntryDirective, TaskOutcome } from '../engine/contract.js';
import { crossBeforeGit } from '../git/cross-objects.js';
import { HookManager } from '../hook/manager.js';
import type { TaskRef } from '../store/task-store.js';
import { actionOptions } from './actions.js';
import type { Diagnosis } from './diagnose.js';
import { diagnoseTask } from './diagnose.js';
import { createMissingWorktree } from './finish-setup.js';
import type { SavedWork } from './save-work.js';
import { resetToCheckpoint, saveWork } from './save-work.js';

export interface RecoverTaskOptions {
  ref: TaskRef;
  config: Config;
  /** Runs the task from the given entry to its end (phase 2: `(entry) => runTask({ ..., entry })`). */
  resume: (entry: EntryDirective) => Promise<TaskOutcome>;
  /** --action: taken as is. Without it, `choose` decides, else the recommendation. */
  action?: RecoveryAction;
  /** Interactive choice after the diagnosis; undefined = abort (leave the task as it is). */
  choose?: (diagnosis: Diagnosis) => Promise<RecoveryAction | undefined>;
  /** Called with the diagnosis before anything is done (to print it). */
  onDiagnosis?: (diagnosis: Diagnosis) => void;
  /** Progress lines for people ("saved 3 changed paths on branch ..."). */
  log?: (line: string) => void;
  /** retry_from_checkpoint: this checkpoint instead of the chosen one. */
  checkpointId?: string;
  manager?: HookManager;
  /** See NO_OWNER_GRACE_MS. */
  graceMs?: number;
  now?: () => Date;
}

export interface DiagnosisSummary {
  kind: Diagnosis['kind'];
  paused_by: string | null;
  fresh: boolean;
  crash_type: RecoveryContext['crash_type'];
  liveness: string;
  last_seen_at: string;
  previous_owner: { pid: number; host: string; heartbeat_at: string } | null;
  /** Process groups the crashed run left running, which recovery stopped (leader pids). */
  stopped_processes: number[];
  state_before: HookState;
  step: { name: string; index: number; attempt: number; max_attempts: number; started_at: string } | null;
  next_step: { name: string; index: number } | null;
  recovery: RecoveryContext;
  checkpoint: { checkpoint_id: string; commit: string | null; description: string; created_at: string } | null;
}

export interface RecoveryResult {
  task_id: string;
  workspace: string;
  worktree: string;
  diagnosis: DiagnosisSummary;
  /** null: aborted at the prompt. */
  action: RecoveryAction | null;
  action_source: 'flag' | 'chosen' | 'recommended' | 'aborted';
  saved_work: SavedWork | null;
  reset_to: { checkpoint_id: string; commit: string } | null;
  entry: EntryDirective | null;
  outcome: TaskOutcome | null;
  /** The hook's state when recovery returned. */
  state: HookState;
  exit_code: ExitCode;
  message: string;
}

export function summarizeDiagnosis(d: Diagnosis): DiagnosisSummary {
  const pos = d.position;
  const step = pos.kind === 'in_step' ? pos.step : undefined;
  const next = pos.kind === 'between' && d.task.steps[pos.next] ? { name: d.task.steps[pos.next]!.name, index: pos.next } : null;
  return {
    kind: d.kind,
    paused_by: d.pausedBy ?? null,
    fresh: d.fresh,
    crash_type: d.recovery.crash_type,
    liveness: d.livenessReason,
    last_seen_at: d.lastSeenAt,
    previous_owner: d.previousOwner
      ? { pid: d.previousOwner.pid, host: d.previousOwner.host, heartbeat_at: d.previousOwner.heartbeat_at }
      : null,
    stopped_processes: d.stoppedProcesses,
    ...(d.sandboxLitter ? { sandbox_litter: d.sandboxLitter } : {}),
    state_before: d.recovery.last_known_state,
    step: step
      ? {
          name: step.step_name,
          index: step.step_index,
          attempt: step.attempt,
          max_attempts: step.max_attempts,
          started_at: step.started_at,
        }
      : null,
    next_step: next,
    recovery: d.recovery,
    checkpoint: d.checkpoint
      ? {
          checkpoint_id: d.checkpoint.checkpoint_id,
          commit: d.checkpoint.git_commit ?? null,
          description: d.checkpoint.description,
          created_at: d.checkpoint.created_at,
        }
      : null,
  };
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `…${flat.slice(flat.length - max + 1)}` : flat;
}

/** What happened, for the agent resuming the step (claude --resume) or the step's log. */
function retryNote(d: Diagnosis, reset?: { checkpoint: StepCheckpoint; saved: SavedWork }): string {
  const r = d.recovery;
  const pos = d.position;
  const what =
    d.kind === 'paused' && d.pausedBy === 'interrupted'
      ? 'was interrupted (Ctrl+C or SIGTERM)'
      : `stopped when atlas crashed (${r.crash_type}: ${d.livenessReason})`;
  const parts: string[] = [];
  if (pos.kind === 'in_step') {
    const s = pos.step;
    parts.push(
      `Note from atlas recover: this step ("${s.step_name}", attempt ${s.attempt}/${s.max_attempts}) ${what}${s.working_on ? ` while working on: ${clip(s.working_on, 200)}` : ''}.`,
    );
    if (r.partial_output) parts.push(`Its last output was: "${clip(r.partial_output, 300)}".`);
  } else {
    parts.push(`Note from atlas recover: the task ${what} between steps.`);
  }
  if (reset) {
    const c = reset.checkpoint;
    parts.push(
      `The working tree was reset to checkpoint ${c.checkpoint_id} ("${clip(c.description, 120)}", commit ${c.git_commit!.slice(0, 12)}, ${c.created_at}).`,
      reset.saved.saved
        ? `Changes made after it are saved on branch ${reset.saved.branch} (compare with \`git diff HEAD ${reset.saved.branch}\`). Continue the step from the checkpoint.`
        : 'Nothing had changed since it. Continue the step from the checkpoint.',
    );
  } else if (pos.kind === 'in_step') {
    parts.push(
      'The working tree still holds whatever the interrupted attempt changed: check `git status` and `git diff` first, do not redo work that is already there, and continue from where it stopped.',
    );
  }
  return parts.join(' ');
}

function skipNote(d: Diagnosis, source: RecoveryResult['action_source']): string {
  return source === 'recommended' || d.recovery.recommended_action === 'skip_step'
    ? `skipped by atlas recover: ${d.recovery.reason}`
    : "skipped by atlas recover at the user's request";
}

function manualMessage(d: Diagnosis): string {
  const id = d.ref.id;
  const actions = d.checkpoint?.git_commit ? 'retry_step|skip_step|retry_from_checkpoint' : 'retry_step|skip_step';
  return (
    `Task ${id} needs a person: ${d.recovery.reason} ` +
    `The working tree is ${d.task.worktree}. Once decided, run \`atlas recover --task ${id} --action ${actions}\`.`
  );
}

/** Rejects an action that makes no sense where the task stopped, saying what to do instead. */
function checkAction(d: Diagnosis, action: RecoveryAction): void {
  if (!isRecoveryAction(action)) {
    throw new AtlasError(`unknown recovery action "${String(action)}"`, {
      exitCode: EXIT.input,
      hint: `use one of ${RECOVERY_ACTIONS.join(', ')}`,
    });
  }
  const option = actionOptions({
    taskId: d.ref.id,
    position: d.position,
    checkpoint: d.checkpoint,
    stepNames: d.task.steps.map((s) => s.name),
  }).find((o) => o.action === action);
  if (option?.unavailable) {
    throw new AtlasError(`cannot ${action} task ${d.ref.id}: ${option.unavailable}`, {
      exitCode: EXIT.input,
      hint: d.position.kind === 'between' ? `use --action retry_step to continue the task` : `use --action retry_step, skip_step or manual`,
    });
  }
}

/** Diagnoses the task, takes the action and runs the task on to its end through `resume`. */
export async function recoverTask(options: RecoverTaskOptions): Promise<RecoveryResult> {
  const { ref, config } = options;
  const log = options.log ?? (() => {});
  const manager =
    options.manager ?? new HookManager(ref, { maxCheckpoints: config.hooks.max_checkpoints, ...(options.now ? { now: options.now } : {}) });
  if (options.action !== undefined && !isRecoveryAction(options.action)) {
    throw new AtlasError(`unknown recovery action "${String(options.action)}"`, {
      exitCode: EXIT.input,
      hint: `use one of ${RECOVERY_ACTIONS.join(', ')}`,
    });
  }
  // Before any git on the task: HEAD names its branch, and what its last sandboxed step wrote
  // crosses verified (or recovery stops and says why).
  await crossBeforeGit(ref.dir);
  const d = await diagnoseTask({
    ref,
    manager,
    heartbeat: { heartbeatIntervalMs: config.hooks.heartbeat_interval, staleThresholdMs: config.hooks.stale_threshold },
    evidence: { validationCommands: config.validation.commands, gitRemote: config.git.remote },
    ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
  });
  const result: RecoveryResult = {
    task_id: ref.id,
    workspace: ref.workspace,
    worktree: d.task.worktree,
    diagnosis: summarizeDiagnosis(d),
    action: null,
    action_source: 'aborted',
    saved_work: null,
    reset_to: null,
    entry: null,
    outcome: null,
    state: d.hook.state,
    exit_code: EXIT.waiting,
    message: '',
  };
  try {
    options.onDiagnosis?.(d);
    for (const c of d.finalizedConversations) {
      log(`Conversation ${c.id} (step ${c.step_name}, attempt ${c.attempt}) was cut off: closed as interrupted with a partial token row.`);
      if (c.stats.lost_in_flight) {
        log(
          `  It was waiting for an answer from the model API: an answer sent while it was being stopped is billed but counted nowhere (lost in flight); \`atlas usage\` marks the run.`,
        );
      }
    }
    let action: RecoveryAction | undefined;
    if (options.action !== undefined) {
      action = options.action;
      result.action_source = 'flag';
    } else if (options.choose) {
      action = await options.choose(d);
      result.action_source = action === undefined ? 'aborted' : 'chosen';
    } else {
      action = d.recovery.recommended_action;
      result.action_source = 'recommended';
    }
    if (action === undefined) {
      result.message =
        `Recovery aborted; task ${ref.id} is left ${d.hook.state === 'recovering' ? 'in recovering with its diagnosis' : `in ${d.hook.state}`}. ` +
        `Run \`atlas recover --task ${ref.id}\` to continue it.`;
      return result;
    }
    checkAction(d, action);
    result.action = action;

    if (action === 'manual') {
      if (d.hook.state === 'recovering') {
        const hook = await manager.transition({
          to: 'awaiting_human',
          trigger: 'manual_recovery_required',
          ...(d.position.kind === 'in_step' ? { stepName: d.position.step.step_name } : {}),
          details: { reason: d.recovery.reason, recommended_action: d.recovery.recommended_action },
        });
        result.state = hook.state;
      }
      result.message = manualMessage(d);
      result.exit_code = EXIT.waiting;
      return result;
    }

    let entry: EntryDirective;
    if (action === 'retry_step' && d.position.kind === 'between') {
      if (!existsSync(d.task.worktree)) {
        // Only recommended when no step ever ran (setup was cut off); otherwise a person chose it.
        log(await createMissingWorktree(d.task));
        await manager.event({ trigger: 'worktree_created', details: { worktree: d.task.worktree, branch: d.task.branch } });
      }
      // Nothing was cut off: the hook goes back to step_pending and the run continues.
      await manager.transition({ to: 'step_pending', trigger: 'recovery_continue', details: { action, next_step_index: d.position.next } });
      entry = { kind: 'continue' };
    } else if (action === 'retry_step') {
      entry = { kind: 'retry_step', note: retryNote(d) };
    } else if (action === 'skip_step') {
      entry = { kind: 'skip_step', note: skipNote(d, result.action_source) };
    } else {
      const checkpoint =
        options.checkpointId !== undefined ? checkpointToReturnTo(d.hook, d.task.steps, options.checkpointId) : d.checkpoint;
      if (!checkpoint?.git_commit) {
        throw new AtlasError(
          options.checkpointId !== undefined
            ? `task ${ref.id} has no checkpoint ${options.checkpointId} with a commit`
            : `task ${ref.id} has no checkpoint with a commit to return to`,
          { exitCode: EXIT.input, hint: `see \`atlas hook checkpoints --task ${ref.id}\`; or use --action retry_step or manual` },
        );
      }
      const now = manager.now();
      const saved = await saveWork({
        worktree: d.task.worktree,
        taskId: ref.id,
        now,
        resetTarget: checkpoint.git_commit,
        reason: `Saved by atlas recover before resetting ${ref.id} to checkpoint ${checkpoint.checkpoint_id} (commit ${checkpoint.git_commit}).`,
      });
      result.saved_work = saved;
      log(
        saved.saved
          ? `Saved work: ${saved.message}. Get it back with: git -C ${d.task.worktree} checkout ${saved.branch} -- .`
          : `Saved work: ${saved.message}.`,
      );
      if (saved.saved) {
        await manager.event({
          trigger: 'work_saved',
          details: {
            branch: saved.branch,
            commit: saved.commit,
            files: saved.files.length,
            ...(saved.index_commit ? { index_commit: saved.index_commit } : {}),
          },
        });
      }
      for (const sub of saved.submodules ?? []) {
        log(`Saved work in submodule ${sub.path}: git -C ${d.task.worktree}/${sub.path} checkout ${sub.branch} -- .`);
        await manager.event({
          trigger: 'work_saved',
          details: { submodule: sub.path, branch: sub.branch, commit: sub.commit, files: sub.files.length },
        });
      }
      // saveWork returned, so every submodule's work is saved too: the reset may recurse into them.
      await resetToCheckpoint(d.task.worktree, checkpoint.git_commit, { submodulesSaved: true });
      await manager.event({
        trigger: 'checkpoint_restored',
        details: { checkpoint_id: checkpoint.checkpoint_id, commit: checkpoint.git_commit },
      });
      result.reset_to = { checkpoint_id: checkpoint.checkpoint_id, commit: checkpoint.git_commit };
      log(`Reset ${d.task.worktree} to checkpoint ${checkpoint.checkpoint_id} (commit ${checkpoint.git_commit.slice(0, 12)}).`);
      entry = { kind: 'retry_step', fromCheckpoint: checkpoint.checkpoint_id, note: retryNote(d, { checkpoint, saved }) };
    }

    result.entry = entry;
    // The runner, in this process, takes over owner.json and its heartbeat from here.
    d.ownership.handOver();
    const outcome = await options.resume(entry);
    result.outcome = outcome;
    result.exit_code = outcome.exitCode;
    result.message = outcome.message;
    try {
      result.state = manager.read().state;
    } catch {
      result.state = outcome.state;
    }
    return result;
  } finally {
    d.ownership.release();
  }
}

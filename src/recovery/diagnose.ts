// Diagnosis of a crashed task (issue 3 §2): under the hook lock, re-check that the owner is really
// gone (a live owner that just beat is never taken over), fill the RecoveryContext, move the hook
// to `recovering` (trigger crash_detected) and make this process the task's owner. A hook already
// in `recovering` keeps its diagnosis. A task paused in awaiting_human (Ctrl+C, or a manual
// recovery) is not a crash: it is diagnosed for display without a transition.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { finalizeRunningConversations } from '../conversation/finalize.js';
import type { StepCheckpoint } from '../domain/checkpoint.js';
import type { ConversationRecord } from '../domain/conversation.js';
import { formatDuration } from '../domain/duration.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { recordEvent, transition } from '../domain/hook.js';
import type { RecoveryContext } from '../domain/recovery-context.js';
import type { FinishedWork, StepPosition } from '../domain/recovery-rules.js';
import {
  checkpointToReturnTo,
  diagnoseCrash,
  enteredStateBy,
  isRecoverablePause,
  judgeCrash,
  stepPosition,
} from '../domain/recovery-rules.js';
import type { Task } from '../domain/task.js';
import type { LitterSweep } from '../exec/sandbox/litter.js';
import { sweepLitter } from '../exec/sandbox/litter.js';
import type { HookManager } from '../hook/manager.js';
import type { Liveness, OwnerRecord } from '../liveness/owner.js';
import { checkLiveness, readOwner } from '../liveness/owner.js';
import type { TaskRef } from '../store/task-store.js';
import { readTask } from '../store/task-store.js';
import type { EvidenceOptions } from './evidence.js';
import { findFinishedWork } from './evidence.js';
import { initialHook } from './initial-hook.js';
import { stopLeftoverProcesses } from './leftovers.js';
import type { HeartbeatSettings, Ownership } from './ownership.js';
import { takeOwnership } from './ownership.js';

export interface Diagnosis {
  ref: TaskRef;
  task: Task;
  /** The hook after diagnosis (in recovering, or still in awaiting_human for a paused task). */
  hook: Hook;
  /** crash: the hook is in recovering; paused: awaiting_human after an interrupt or a manual recovery. */
  kind: 'crash' | 'paused';
  /** How the task entered awaiting_human (paused only), e.g. interrupted, manual_recovery_required. */
  pausedBy?: string;
  /** False when an earlier diagnosis (a recovery that did not finish) was reused. */
  fresh: boolean;
  recovery: RecoveryContext;
  /** Why the owner was judged gone, e.g. "process 4242 is no longer running". */
  livenessReason: string;
  /** The task's last sign of life before it stopped: its owner's last heartbeat or its last hook change. */
  lastSeenAt: string;
  /** The owner.json that was replaced, if any. */
  previousOwner?: OwnerRecord;
  position: StepPosition;
  /** Where retry_from_checkpoint would return. */
  checkpoint: StepCheckpoint | undefined;
  /** This process owns the task until release() (or handOver() to the runner). */
  ownership: Ownership;
  /** Process groups the crashed run left running, stopped before diagnosing (leader pids). */
  stoppedProcesses: number[];
  /** What a killed sandboxed run left (stubs in the worktree, bridge sockets, socat), removed before diagnosing. */
  sandboxLitter?: LitterSweep;
  /** Agent conversations the dead run left `running`, now closed as interrupted with a partial ledger row. */
  finalizedConversations: ConversationRecord[];
}

export interface DiagnoseOptions {
  ref: TaskRef;
  manager: HookManager;
  heartbeat: HeartbeatSettings;
  evidence?: EvidenceOptions;
  /** See NO_OWNER_GRACE_MS. */
  graceMs?: number;
}

function ownerSummary(owner: OwnerRecord): Record<string, unknown> {
  return {
    pid: owner.pid,
    host: owner.host,
    process_start: owner.process_start,
    started_at: owner.started_at,
    heartbeat_at: owner.heartbeat_at,
  };
}

function ownerOf(liveness: Liveness): OwnerRecord | undefined {
  return liveness.status === 'none' ? undefined : liveness.owner;
}

function ago(ts: string, now: number): string {
  return `${formatDuration(Math.max(0, now - Date.parse(ts)))} ago`;
}

/** Throws unless the owner is judged dead right now; returns why it is. */
function requireDeadOwner(hook: Hook, liveness: Liveness, now: number, graceMs: number | undefined): string {
  const id = hook.task_id;
  if (liveness.status === 'stale' && liveness.owner.host === hostname()) {
    // Same host and the pid still belongs to the owner: a stopped or hung process could wake up
    // and carry on beside the recovery. It must be stopped first.
    throw new AtlasError(
      `task ${id}'s process ${liveness.owner.pid} still exists but has not beaten for ${ago(liveness.owner.heartbeat_at, now).replace(/ ago$/, '')}: it is stopped or hung`,
      {
        exitCode: EXIT.failure,
        hint: `stop it first (kill ${liveness.owner.pid}, or kill -9 ${liveness.owner.pid} if it does not exit), then run \`atlas recover --task ${id}\` again`,
      },
    );
  }
  if (liveness.status === 'alive' || liveness.status === 'remote') {
    const where = `process ${liveness.owner.pid}${liveness.status === 'remote' ? ` on ${liveness.owner.host}` : ''}`;
    const beat = `last heartbeat ${ago(liveness.owner.heartbeat_at, now)}`;
    if (hook.state === 'awaiting_human') {
      throw new AtlasError(`task ${id} is waiting for an answer in ${where}`, {
        exitCode: EXIT.failure,
        hint: 'answer it in that terminal, or stop that process and run `atlas recover` again',
      });
    }
    throw new AtlasError(
      hook.state === 'recovering'
        ? `task ${id} is being recovered by ${where} (${beat})`
        : `task ${id} is running in ${where} (${beat}): nothing to recover`,
      {
        exitCode: EXIT.failure,
        hint: `wait for it, or stop it (Ctrl+C in its terminal, or kill ${liveness.owner.pid}) and run \`atlas recover --task ${id}\``,
      },
    );
  }
  if (hook.state === 'awaiting_human') return liveness.status === 'gone' ? liveness.reason : 'the process that ran it has stopped';
  const judged = judgeCrash({
    state: hook.state,
    updatedAt: hook.updated_at,
    liveness: liveness.status,
    now,
    ...(graceMs !== undefined ? { graceMs } : {}),
  });
  if (!judged.crashed) {
    throw new AtlasError(`task ${id} was updated ${ago(hook.updated_at, now)} and has no owner yet: it is probably starting`, {
      exitCode: EXIT.failure,
      hint: 'if no atlas process is running it, wait a few seconds and run `atlas recover` again',
    });
  }
  if (liveness.status === 'gone' || liveness.status === 'stale') return liveness.reason;
  return hook.state === 'recovering'
    ? 'an earlier recovery did not finish (no process owns the task)'
    : `no process owns the task and its hook has not changed for ${ago(hook.updated_at, now).replace(/ ago$/, '')}`;
}

function later(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** The last heartbeat or hook change before the crash (or the pause). */
function lastSeen(hook: Hook): string {
  const history = hook.history;
  for (let i = history.length - 1; i > 0; i--) {
    const e = history[i]!;
    if (e.trigger === 'crash_detected') {
      const owner = e.details?.['previous_owner'] as { heartbeat_at?: unknown } | null | undefined;
      const beat = typeof owner?.heartbeat_at === 'string' ? owner.heartbeat_at : undefined;
      return later(beat, history[i - 1]!.timestamp) ?? e.timestamp;
    }
  }
  return enteredStateBy(hook) ? [...history].reverse().find((e) => e.to_state === hook.state)!.timestamp : hook.updated_at;
}

/** Where retry_from_checkpoint returns: the recommended checkpoint when there is one, so what was shown is what is done. */
function returnPoint(hook: Hook, steps: Task['steps'], recovery: RecoveryContext): StepCheckpoint | undefined {
  if (recovery.recommended_action === 'retry_from_checkpoint' && recovery.last_checkpoint_id) {
    const recommended = hook.checkpoints.find((c) => c.checkpoint_id === recovery.last_checkpoint_id && c.git_commit);
    if (recommended) return recommended;
  }
  return checkpointToReturnTo(hook, steps);
}

function sameAttempt(a: StepPosition, b: StepPosition): boolean {
  return a.kind === 'in_step' && b.kind === 'in_step' && a.step.step_index === b.step.step_index && a.startedAt === b.startedAt;
}

/**
 * `atlas start` was killed after writing task.json and before hook.json: writes the hook it would
 * have written (in initializing), unless the start is still alive (or too young to tell).
 */
async function restoreInitialHook(manager: HookManager, task: Task, graceMs: number | undefined): Promise<void> {
  const hook = initialHook(task);
  const liveness = checkLiveness(readOwner(manager.files.owner), manager.now().getTime());
  if (liveness.status === 'alive' || liveness.status === 'remote') {
    throw new AtlasError(`task ${task.id} is being created by process ${liveness.owner.pid}: nothing to recover`, {
      exitCode: EXIT.failure,
      hint: 'wait for `atlas start` to set it up',
    });
  }
  const judged = judgeCrash({
    state: hook.state,
    updatedAt: hook.updated_at,
    liveness: liveness.status,
    now: manager.now().getTime(),
    ...(graceMs !== undefined ? { graceMs } : {}),
  });
  if (!judged.crashed) {
    throw new AtlasError(`task ${task.id} was created moments ago and has no hook yet: it is probably starting`, {
      exitCode: EXIT.failure,
      hint: 'if no atlas process is running it, wait a few seconds and run `atlas recover` again',
    });
  }
  // Two recoveries racing here write the same hook; the hook lock then lets one of them diagnose.
  if (existsSync(manager.files.hook)) return;
  await manager.create(
    recordEvent(hook, {
      trigger: 'hook_restored',
      at: manager.timestamp(),
      details: { reason: 'atlas start stopped before it wrote hook.json; this is the hook it would have written' },
    }),
  );
}

/** Diagnoses the task and takes it over for this process. Throws AtlasError when there is nothing to recover. */
export async function diagnoseTask(options: DiagnoseOptions): Promise<Diagnosis> {
  const { ref, manager } = options;
  // Strictly, at the edge: a task.json atlas cannot run (an unknown step type) stops here, exit 2
  // naming the field, before the hook is touched.
  const task = existsSync(manager.files.task) ? readTask(ref.dir) : undefined;
  if (!task) {
    throw new AtlasError(`task ${ref.id} has no readable task.json in ${ref.dir}`, {
      exitCode: EXIT.input,
      hint: "restore task.json from a backup; without it atlas does not know the task's steps or working tree",
    });
  }
  if (!existsSync(manager.files.hook)) await restoreInitialHook(manager, task, options.graceMs);
  const before = manager.read();
  if (before.state === 'completed' || before.state === 'failed' || before.state === 'abandoned') {
    throw new AtlasError(`task ${ref.id} is ${before.state}: there is nothing to recover`, {
      exitCode: EXIT.notFound,
      hint: 'ended tasks never resume; start a new task (atlas start) to continue the work',
    });
  }
  if (before.state === 'awaiting_human' && !isRecoverablePause(before)) {
    // An approval, "stop for now" or a failed step with on_failure: ask: not a crash, and the
    // answer a person gives belongs to `atlas resume`.
    const why = enteredStateBy(before)?.trigger === 'step_failed' ? 'a step failed and on_failure is ask' : 'a step waits for approval';
    throw new AtlasError(
      `task ${ref.id} is waiting for a person (${why}), not stopped by a crash or an interrupt: there is nothing to recover`,
      {
        exitCode: EXIT.notFound,
        hint: `continue it with \`atlas resume --task ${ref.id}\` (--approve or --reject to answer)`,
      },
    );
  }
  const ownerPath = manager.files.owner;
  const nowMs = () => manager.now().getTime();
  // Checked before the (slow) evidence is gathered, so a running task is refused at once.
  const prior = checkLiveness(readOwner(ownerPath), nowMs());
  requireDeadOwner(before, prior, nowMs(), options.graceMs);
  // Before anything looks at the tree: whatever the dead run left running must stop changing it.
  const stoppedProcesses = prior.status === 'gone' ? await stopLeftoverProcesses(prior.owner) : [];
  // Once nothing of the dead run holds its mounts: the sandbox's stubs are not the agent's work.
  const sandboxLitter = await sweepLitter(ref.dir);

  const worktreePresent = existsSync(task.worktree);
  const beforePos = stepPosition(before, task.steps);
  let finished: FinishedWork | undefined;
  if (worktreePresent && beforePos.kind === 'in_step' && before.state !== 'recovering') {
    finished = await findFinishedWork(before, task, beforePos, options.evidence);
  }

  let ownership: Ownership | undefined;
  let fresh = false;
  let livenessReason = '';
  let previousOwner: OwnerRecord | undefined;
  let recovery: RecoveryContext | undefined;
  try {
    const hook = await manager.update((current) => {
      const liveness = checkLiveness(readOwner(ownerPath), nowMs());
      livenessReason = requireDeadOwner(current, liveness, nowMs(), options.graceMs);
      previousOwner = ownerOf(liveness);
      const pos = stepPosition(current, task.steps);
      const compute = () =>
        diagnoseCrash({
          hook: current,
          steps: task.steps,
          // A paused task was stopped by a signal (Ctrl+C/SIGTERM) or is after a crash.
          liveness:
            current.state === 'awaiting_human' || liveness.status === 'gone' ? 'gone' : liveness.status === 'stale' ? 'stale' : 'none',
          now: manager.timestamp(),
          worktreePresent,
          ...(finished && sameAttempt(beforePos, pos) ? { finishedWork: finished } : {}),
        });
      ownership = takeOwnership(ownerPath, options.heartbeat);
      const at = manager.timestamp();
      const details = {
        liveness: livenessReason,
        previous_owner: previousOwner ? ownerSummary(previousOwner) : null,
        ...(stoppedProcesses.length > 0 ? { stopped_processes: stoppedProcesses } : {}),
        ...(sandboxLitter ? { sandbox_litter: sandboxLitter } : {}),
      };
      // A current_step left over from a finished step is not the step the crash cut off.
      const stepName = pos.kind === 'in_step' ? { stepName: pos.step.step_name } : {};
      if (current.state === 'awaiting_human') {
        // Not a crash: the hook is not changed; the diagnosis is shown and the chosen action decides.
        const afterManual = current.recovery !== undefined && enteredStateBy(current)?.trigger === 'manual_recovery_required';
        fresh = !afterManual;
        recovery = afterManual ? current.recovery : compute();
        return current;
      }
      if (current.state === 'recovering') {
        // An earlier recovery stopped half-way: keep its diagnosis, note the takeover.
        fresh = current.recovery === undefined;
        recovery = current.recovery ?? compute();
        // Say why the task crashed in the first place, not only that the last recovery stopped.
        const crash = [...current.history].reverse().find((e) => e.trigger === 'crash_detected');
        const original = crash?.details?.['liveness'];
        if (!fresh && typeof original === 'string') livenessReason = original;
        return { ...recordEvent(current, { trigger: 'recovery_resumed', at, details, ...stepName }), recovery };
      }
      fresh = true;
      recovery = compute();
      const moved = transition(current, {
        to: 'recovering',
        trigger: 'crash_detected',
        at,
        ...stepName,
        details: { crash_type: recovery.crash_type, ...details, recommended_action: recovery.recommended_action },
      });
      return { ...moved, recovery };
    });
    const pausedBy = hook.state === 'awaiting_human' ? enteredStateBy(hook)?.trigger : undefined;
    // The dead run cannot finish its conversations any more (its owner is gone, checked above).
    let finalizedConversations: ConversationRecord[] = [];
    try {
      finalizedConversations = finalizeRunningConversations(ref.dir, manager.now());
    } catch {
      // A conversation that cannot be closed stays `running`; recovery itself goes on.
    }
    const diagnosis: Diagnosis = {
      ref,
      task,
      hook,
      kind: hook.state === 'awaiting_human' ? 'paused' : 'crash',
      fresh,
      recovery: recovery!,
      livenessReason,
      lastSeenAt: lastSeen(hook),
      position: stepPosition(hook, task.steps),
      checkpoint: returnPoint(hook, task.steps, recovery!),
      ownership: ownership!,
      stoppedProcesses,
      finalizedConversations,
    };
    if (pausedBy !== undefined) diagnosis.pausedBy = pausedBy;
    if (previousOwner) diagnosis.previousOwner = previousOwner;
    if (sandboxLitter) diagnosis.sandboxLitter = sandboxLitter;
    return diagnosis;
  } catch (error) {
    (ownership as Ownership | undefined)?.release();
    throw error;
  }
}

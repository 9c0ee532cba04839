// Which tasks have crashed (DESIGN §6). Read-only and light (file reads, no git, no config, no
// prompts): `atlas status` marks crashed tasks with it and `atlas start` warns about them.
// hook.json is authoritative for the state; owner.json says who runs the task and when it last
// beat; checkLiveness tells a dead or reused pid from the owner (process start identity) and
// judges the heartbeat with the owner's own recorded stale threshold.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { formatDuration } from '../domain/duration.js';
import type { Hook } from '../domain/hook.js';
import type { CrashType } from '../domain/recovery-context.js';
import { isRecoverablePause, judgeCrash } from '../domain/recovery-rules.js';
import type { Task } from '../domain/task.js';
import { realpath } from '../git/locate.js';
import type { Liveness } from '../liveness/owner.js';
import { checkLiveness, readOwner } from '../liveness/owner.js';
import { assertHookOfTask, readHookFile } from '../store/hook-file.js';
import { atlasHome, taskFiles } from '../store/paths.js';
import type { TaskRef } from '../store/task-store.js';
import { listTaskRefs, tryReadTask } from '../store/task-store.js';
import { initialHook } from './initial-hook.js';

export type DeadLiveness = Extract<Liveness, { status: 'gone' | 'stale' | 'none' }>;

export type TaskHealth =
  | {
      condition: 'crashed';
      ref: TaskRef;
      task: Task | undefined;
      hook: Hook;
      crashType: CrashType;
      liveness: DeadLiveness;
      reason: string;
      ownerStillRunning: boolean;
    }
  /** An owner is alive (or beats from another host), or the task started moments ago. */
  | { condition: 'running'; ref: TaskRef; task: Task | undefined; hook: Hook; liveness: Liveness; reason: string }
  /** awaiting_human after Ctrl+C/SIGTERM or a manual recovery: `atlas recover` continues it. */
  | { condition: 'paused'; ref: TaskRef; task: Task | undefined; hook: Hook; liveness: Liveness; reason: string }
  /** awaiting_human for another reason (e.g. an approval). */
  | { condition: 'waiting'; ref: TaskRef; task: Task | undefined; hook: Hook; liveness: Liveness; reason: string }
  | { condition: 'ended'; ref: TaskRef; task: Task | undefined; hook: Hook; liveness: Liveness; reason: string }
  /** hook.json missing or invalid: nothing can be judged. */
  | { condition: 'unreadable'; ref: TaskRef; task: Task | undefined; reason: string };

export type CrashedTask = Extract<TaskHealth, { condition: 'crashed' }>;
export type PausedTask = Extract<TaskHealth, { condition: 'paused' }>;

export interface DetectOptions {
  home?: string;
  /** Only tasks started from (or running in) this repository. */
  repoRoot?: string;
  now?: number;
  /** How old a hook without owner.json must be to count as crashed (default NO_OWNER_GRACE_MS). */
  graceMs?: number;
}

function ageText(ts: string, now: number): string {
  const ms = now - Date.parse(ts);
  return Number.isFinite(ms) ? formatDuration(Math.max(0, ms)) : 'an unknown time';
}

function pauseReason(hook: Hook): string {
  const entered = [...hook.history].reverse().find((e) => e.to_state === 'awaiting_human' && e.from_state !== 'awaiting_human');
  const step = entered?.step_name !== undefined ? ` during step ${entered.step_name}` : '';
  if (entered?.trigger === 'interrupted') {
    const signal = entered.details?.['signal'];
    return `interrupted${typeof signal === 'string' ? ` by ${signal}` : ''}${step}`;
  }
  // Nothing crashed: a lifecycle hook failed and the agent never started.
  if (entered?.trigger === 'cold_start_failed')
    return `the OnColdStart hook failed, so the agent did not start${step}; fix the hook, then recover`;
  return `waits for a recovery decision (a crash cut off ${step ? step.replace(' during ', '') : 'the task'})`;
}

/** The condition of one task right now. Never throws. */
export function inspectTask(ref: TaskRef, options: Omit<DetectOptions, 'home' | 'repoRoot'> = {}): TaskHealth {
  const now = options.now ?? Date.now();
  const files = taskFiles(ref.dir);
  const task = tryReadTask(ref.dir);
  let hook: Hook;
  try {
    // A start killed after task.json and before hook.json: judged by the hook it would have written.
    hook = task && !existsSync(files.hook) ? initialHook(task) : readHookFile(files.hook);
    assertHookOfTask(files.hook, hook, ref.id, task?.steps);
  } catch (error) {
    return { condition: 'unreadable', ref, task, reason: (error as Error).message };
  }
  const liveness = checkLiveness(readOwner(files.owner), now);
  const judgement = judgeCrash({
    state: hook.state,
    updatedAt: hook.updated_at,
    liveness: liveness.status,
    now,
    ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
  });
  if (judgement.crashed) {
    const dead = liveness as DeadLiveness;
    const reason =
      dead.status === 'none'
        ? hook.state === 'recovering'
          ? 'a recovery was left unfinished (no process owns the task)'
          : `no process owns the task (no owner.json) and its hook has not changed for ${ageText(hook.updated_at, now)}`
        : dead.reason;
    const ownerStillRunning = dead.status === 'stale' && dead.owner.host === hostname();
    return { condition: 'crashed', ref, task, hook, crashType: judgement.crashType, liveness: dead, reason, ownerStillRunning };
  }
  switch (judgement.why) {
    case 'ended':
      return { condition: 'ended', ref, task, hook, liveness, reason: `the task is ${hook.state}` };
    case 'waiting':
      return isRecoverablePause(hook)
        ? { condition: 'paused', ref, task, hook, liveness, reason: pauseReason(hook) }
        : { condition: 'waiting', ref, task, hook, liveness, reason: 'waiting for a person' };
    case 'starting':
      return {
        condition: 'running',
        ref,
        task,
        hook,
        liveness,
        reason: `started ${ageText(hook.updated_at, now)} ago; its owner has not registered yet`,
      };
    case 'running': {
      const owner = liveness.status === 'alive' || liveness.status === 'remote' ? liveness.owner : undefined;
      const where = owner ? `pid ${owner.pid}${liveness.status === 'remote' ? ` on ${owner.host}` : ''}` : 'its owner';
      return {
        condition: 'running',
        ref,
        task,
        hook,
        liveness,
        reason: `run by ${where}, last heartbeat ${owner ? ageText(owner.heartbeat_at, now) : '?'} ago`,
      };
    }
  }
}

function inRepo(health: TaskHealth, root: string | undefined): boolean {
  if (root === undefined) return true;
  const task = health.task;
  if (!task) return false;
  return realpath(task.repo_root) === root || realpath(task.worktree) === root;
}

/** Every task's condition, oldest first. */
export function scanTasks(options: DetectOptions = {}): TaskHealth[] {
  const now = options.now ?? Date.now();
  const root = options.repoRoot !== undefined ? realpath(options.repoRoot) : undefined;
  const inspect = { now, ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}) };
  return listTaskRefs(options.home ?? atlasHome())
    .map((ref) => inspectTask(ref, inspect))
    .filter((h) => inRepo(h, root));
}

/** Tasks that crashed (DESIGN §6): non-terminal, not awaiting_human, owner gone or stale (or absent past the grace). */
export function findCrashedTasks(options: DetectOptions = {}): CrashedTask[] {
  return scanTasks(options).filter((h): h is CrashedTask => h.condition === 'crashed');
}

/** What `atlas recover` without --task offers: crashed tasks and tasks paused by an interrupt or a manual recovery. */
export function findRecoverableTasks(options: DetectOptions = {}): (CrashedTask | PausedTask)[] {
  return scanTasks(options).filter((h): h is CrashedTask | PausedTask => h.condition === 'crashed' || h.condition === 'paused');
}

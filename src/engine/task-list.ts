// Tasks for `atlas status`: newest first, with where each one is and whether its process is
// still there. Reads files only (no git, no heavy modules): status must stay instant. Whether a
// task crashed is decided by recovery's one rule (recovery/detect.ts inspectTask), so status,
// `atlas start`'s warning and `atlas recover` always agree.

import { halfCreatedNote, isHalfCreated } from '../cleanup/half-created.js';
import { nextStepIndex } from '../domain/hook.js';
import type { HookState } from '../domain/hook-state.js';
import { isTerminal } from '../domain/hook-state.js';
import type { CrashType } from '../domain/recovery-context.js';
import { readExecutionRecord } from '../exec/task-executor.js';
import { inspectTask } from '../recovery/detect.js';
import {
  endedWorkspacesAfter,
  listTaskRefsCached,
  readEndedWorkspaces,
  sameEndedWorkspaces,
  writeEndedWorkspaces,
} from '../store/ended-tasks.js';
import type { TaskRef } from '../store/task-store.js';
import { readTaskStatus } from '../store/task-store.js';

/**
 * running: its process is alive (or it is starting); waiting: it waits for a person (approval, a
 * failed step with on_failure: ask); paused: interrupted (Ctrl+C/SIGTERM) or waiting for a
 * recovery decision, `atlas recover` continues it; crashed: its process is gone or hung;
 * not_responding: its process still exists on this host but has stopped beating (SIGSTOP, hung):
 * it must be stopped before `atlas recover` will act; ended.
 */
export type TaskActivity = 'running' | 'waiting' | 'paused' | 'crashed' | 'not_responding' | 'ended';

export interface TaskSummary {
  id: string;
  workspace: string;
  template: string;
  description: string;
  state: HookState;
  activity: TaskActivity;
  /** 1-based number of the active or next step (the last one when the task has ended). */
  step: number;
  steps: number;
  step_name: string | null;
  steps_done: number;
  created_at: string;
  updated_at: string;
  worktree: string;
  branch: string;
  /** crashed only: signal (owner gone), timeout (heartbeat stale) or unknown (no owner record). */
  crash_type?: CrashType;
  /** crashed and paused: why, e.g. "process 4242 is no longer running". */
  note?: string;
  /** not_responding: the process to stop before `atlas recover`. */
  pid?: number;
  /** How the task's last run started its steps' processes (execution.json); null before any run. */
  mode: 'local' | 'sandbox' | null;
}

export interface TaskListing {
  tasks: TaskSummary[];
  /** Ended tasks left out (without --all). */
  hidden: number;
  unreadable: { id: string; error: string }[];
}

export const RECENT_ENDED = 5;

/** One task for the listing; throws (with the reason) when its task.json or hook.json cannot be read. */
export function summarizeTask(ref: TaskRef, now = Date.now()): TaskSummary {
  const health = inspectTask(ref, { now });
  // The rule `atlas cleanup` removes such folders by, so the two always agree.
  if (health.condition === 'unreadable' && !health.task && isHalfCreated(ref.dir)) throw new Error(halfCreatedNote(ref.dir, now));
  if (health.condition === 'unreadable') throw new Error(health.reason);
  const { task, hook } = health;
  if (!task) throw new Error(`${ref.dir}/task.json is missing or unreadable`);
  const done = Math.min(nextStepIndex(hook), task.steps.length);
  const index = hook.current_step?.step_index ?? Math.min(done, Math.max(0, task.steps.length - 1));
  let extra: Pick<TaskSummary, 'crash_type' | 'note' | 'pid'> = {};
  let activity: TaskActivity = health.condition;
  if (health.condition === 'crashed' && health.ownerStillRunning && health.liveness.status === 'stale') {
    // recover refuses while the process exists (it could wake up and carry on beside it).
    activity = 'not_responding';
    extra = { crash_type: health.crashType, note: health.reason, pid: health.liveness.owner.pid };
  } else if (health.condition === 'crashed') extra = { crash_type: health.crashType, note: health.reason };
  else if (health.condition === 'paused') extra = { note: health.reason };
  return {
    id: ref.id,
    workspace: ref.workspace,
    template: task.template,
    description: task.description,
    state: hook.state,
    activity,
    step: hook.state === 'completed' ? task.steps.length : index + 1,
    steps: task.steps.length,
    step_name: task.steps[index]?.name ?? null,
    steps_done: hook.state === 'completed' ? task.steps.length : done,
    created_at: task.created_at,
    updated_at: hook.updated_at,
    worktree: task.worktree,
    branch: task.branch,
    mode: readExecutionRecord(ref.dir)?.mode ?? null,
    ...extra,
  };
}

function isTerminalStatus(status: HookState | undefined): boolean {
  return status !== undefined && isTerminal(status);
}

export function listTasks(home: string, options: { all?: boolean; recentEnded?: number } = {}): TaskListing {
  const keep = options.recentEnded ?? RECENT_ENDED;
  const tasks: TaskSummary[] = [];
  const unreadable: { id: string; error: string }[] = [];
  let endedShown = 0;
  let hidden = 0;
  const now = Date.now();
  const cache = readEndedWorkspaces(home);
  const listing = listTaskRefsCached(home, cache);
  const ended = new Set<TaskRef>();
  for (const ref of [...listing.refs].reverse()) {
    // An ended task beyond the ones shown is only counted, from the cache or its task.json status
    // (the hook's mirror): its hook.json, possibly thousands of events, is never read.
    if (!options.all && endedShown >= keep) {
      const isEnded = listing.ended.has(ref) || isTerminalStatus(readTaskStatus(ref.dir));
      if (isEnded) {
        ended.add(ref);
        hidden++;
        continue;
      }
    }
    let summary: TaskSummary;
    try {
      summary = summarizeTask(ref, now);
    } catch (error) {
      unreadable.push({ id: ref.id, error: error instanceof Error ? error.message : String(error) });
      continue;
    }
    if (summary.activity === 'ended') ended.add(ref);
    if (summary.activity === 'ended' && !options.all) {
      if (endedShown >= keep) {
        hidden++;
        continue;
      }
      endedShown++;
    }
    tasks.push(summary);
  }
  const next = endedWorkspacesAfter(listing, ended);
  if (!sameEndedWorkspaces(cache, next)) writeEndedWorkspaces(home, next);
  return { tasks, hidden, unreadable };
}

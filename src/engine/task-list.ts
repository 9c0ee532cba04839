// Tasks for `atlas status`: newest first, with where each one is and whether its process is
// still there. Reads files only (no git, no heavy modules): status must stay instant.
import { nextStepIndex } from '../domain/hook.js';
import type { HookState } from '../domain/hook-state.js';
import { isTerminal } from '../domain/hook-state.js';
import { checkLiveness, readOwner } from '../liveness/owner.js';
import { readHookFile } from '../store/hook-file.js';
import { taskFiles } from '../store/paths.js';
import { listTaskRefs, readTask } from '../store/task-store.js';

/** running: its process is alive; waiting: it waits for a person; stopped: no live process (crashed?); ended. */
export type TaskActivity = 'running' | 'waiting' | 'stopped' | 'ended';

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
  /** Why it is "stopped", from its owner record. */
  note?: string;
}

export interface TaskListing {
  tasks: TaskSummary[];
  /** Ended tasks left out (without --all). */
  hidden: number;
  unreadable: { id: string; error: string }[];
}

export const RECENT_ENDED = 5;

export function summarizeTask(dir: string, workspace: string, id: string, now = Date.now()): TaskSummary {
  const task = readTask(dir);
  const files = taskFiles(dir);
  const hook = readHookFile(files.hook);
  const done = Math.min(nextStepIndex(hook), task.steps.length);
  const index = hook.current_step?.step_index ?? Math.min(done, Math.max(0, task.steps.length - 1));
  let activity: TaskActivity = 'ended';
  let note: string | undefined;
  if (!isTerminal(hook.state)) {
    const live = checkLiveness(readOwner(files.owner), now);
    if (live.status === 'alive' || live.status === 'remote') activity = 'running';
    else if (hook.state === 'awaiting_human') activity = 'waiting';
    else {
      activity = 'stopped';
      note = live.status === 'none' ? 'no process owns it' : live.reason;
    }
  }
  return {
    id,
    workspace,
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
    ...(note ? { note } : {}),
  };
}

export function listTasks(home: string, options: { all?: boolean; recentEnded?: number } = {}): TaskListing {
  const keep = options.recentEnded ?? RECENT_ENDED;
  const tasks: TaskSummary[] = [];
  const unreadable: { id: string; error: string }[] = [];
  let endedShown = 0;
  let hidden = 0;
  const now = Date.now();
  for (const ref of listTaskRefs(home).reverse()) {
    let summary: TaskSummary;
    try {
      summary = summarizeTask(ref.dir, ref.workspace, ref.id, now);
    } catch (error) {
      unreadable.push({ id: ref.id, error: error instanceof Error ? error.message : String(error) });
      continue;
    }
    if (summary.activity === 'ended' && !options.all) {
      if (endedShown >= keep) {
        hidden++;
        continue;
      }
      endedShown++;
    }
    tasks.push(summary);
  }
  return { tasks, hidden, unreadable };
}

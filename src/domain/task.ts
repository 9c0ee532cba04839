// task.json: what a task is (its template snapshot, where it runs). Progress lives in hook.json.

import type { ExecutionMode } from './execution-mode.js';
import type { HookState } from './hook-state.js';
import type { LifecycleCommands, StepDefinition } from './template.js';

export const TASK_SCHEMA_VERSION = '1.0';
export const TASK_ID_PATTERN = /^task-\d{8}-\d{6}(?:-\d+)?$/;

export interface Task {
  schema_version: string;
  id: string;
  workspace_id: string;
  template: string;
  description: string;
  created_at: string;
  updated_at: string;
  /** Mirror of the hook's state, for listings; hook.json is authoritative. */
  status: HookState;
  /** The repository the task was started from. */
  repo_root: string;
  /** Where the steps run: a git worktree, or repo_root with --in-place. */
  worktree: string;
  in_place: boolean;
  branch: string;
  base_branch?: string;
  base_commit?: string;
  /** The template's steps as they were when the task started. */
  steps: StepDefinition[];
  /** The template's `lifecycle:` commands as they were when the task started. */
  lifecycle?: LifecycleCommands;
  /** The template's `control_paths:` (changed without review) as they were when the task started. */
  control_paths?: string[];
  /** Never-reused key derivation index (DESIGN §7). */
  task_index?: number;
  /**
   * validation.commands as configured when the task started (-c, ATLAS_*, config files), so a
   * resume or recovery runs exactly these, not whatever the configuration says later.
   */
  validation_commands?: string[];
  /**
   * execution.mode when the task started (or as a later --local/--sandbox changed it): resume and
   * recover run the task in it, not in whatever the configuration's default is by then.
   */
  execution_mode?: ExecutionMode;
}

export interface Workspace {
  schema_version: string;
  name: string;
  repo_root: string;
  worktree: string;
  branch: string;
  created_at: string;
  updated_at: string;
  tasks: string[];
}

/** task-YYYYMMDD-HHMMSS from a UTC time; `attempt` > 1 adds a collision suffix. */
export function taskIdFor(date: Date, attempt = 1): string {
  const iso = date.toISOString();
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
  return attempt > 1 ? `task-${stamp}-${attempt}` : `task-${stamp}`;
}

/** A workspace name from free text: lowercase words joined by dashes, at most 40 characters. */
export function slugify(text: string, fallback = 'task'): string {
  const slug = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return slug.length > 0 ? slug : fallback;
}

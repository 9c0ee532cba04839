// What a sync works on: a folder (the task's working tree, or --dir) and the tree it maps to in
// the store; with a task, the task's own folder travels too.
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { TREE_NAME_PATTERN } from '../../domain/sync-retention.js';
import type { ExcludeRule } from '../../domain/sync-state.js';
import { compileExcludes } from '../../domain/sync-state.js';
import { slugify } from '../../domain/task.js';
import { requireTask } from '../../hook/resolve-task.js';
import { findTaskRef, readTask } from '../../store/task-store.js';
import type { Progress } from '../report/progress.js';
import type { SyncStore } from './store.js';

export interface SyncTarget {
  /** The folder synced (with `named`, the current directory, which is not read or locked). */
  root: string;
  /** Named by --workspace alone: only the store's tree, no folder of this machine. */
  named?: true;
  /** Its tree in the store: the workspace name. */
  tree: string;
  workspace: string;
  /** The task whose folder a push also stores. */
  task?: { id: string; dir: string };
}

export interface SyncDeps {
  store: SyncStore;
  config: Config;
  warn: (text: string) => void;
  progress?: Progress;
  /** Milliseconds; a seam for tests of staleness. */
  now?: () => number;
  /** The store's clock for the ages of its objects (ms; Date.now when absent): a seam for tests of garbage collection. */
  storeNow?: () => number;
  /**
   * Called right before a version is published (its manifest written), after its blobs are sent:
   * throwing refuses the version (a server turn whose lease was taken over, src/server/conversations/turn-lease.ts).
   */
  beforePublish?: () => Promise<void>;
}

export function checkTreeName(name: string, what: string): string {
  if (!TREE_NAME_PATTERN.test(name)) {
    throw new AtlasError(`${what} "${name}" cannot name a folder in the store`, {
      exitCode: EXIT.input,
      hint: 'use letters, digits, ".", "_" and "-" (starting with a letter or digit)',
    });
  }
  return name;
}

export function targetOfTask(taskId: string, home: string): SyncTarget {
  const ref = findTaskRef(taskId, home);
  const task = readTask(ref.dir);
  return {
    root: task.worktree,
    tree: checkTreeName(task.workspace_id, 'workspace'),
    workspace: task.workspace_id,
    task: { id: task.id, dir: ref.dir },
  };
}

export interface TargetFlags {
  task?: string;
  dir?: string;
  workspace?: string;
}

/**
 * `storeOnly`: the command reads or changes the store alone (versions, prune, export), so
 * `--workspace NAME` by itself names what it works on; a push, pull or status needs the folder.
 */
export function resolveTarget(flags: TargetFlags, cwd: string, home: string, options: { storeOnly?: boolean } = {}): SyncTarget {
  if (flags.task !== undefined && flags.dir !== undefined) {
    throw new AtlasError('--task and --dir are two ways to say what to sync: pass one', { exitCode: EXIT.input });
  }
  if (flags.dir !== undefined) {
    const root = resolve(cwd, flags.dir);
    const workspace = checkTreeName(flags.workspace ?? slugify(basename(root), 'workspace'), 'workspace');
    return { root, tree: workspace, workspace };
  }
  if (flags.workspace !== undefined) {
    if (flags.task !== undefined)
      throw new AtlasError('--workspace goes with --dir (a task syncs under its own workspace name)', { exitCode: EXIT.input });
    if (!options.storeOnly)
      throw new AtlasError("--workspace names the store's copy of a folder: pass the folder too, with --dir PATH", {
        exitCode: EXIT.input,
      });
    const workspace = checkTreeName(flags.workspace, 'workspace');
    return { root: cwd, tree: workspace, workspace, named: true };
  }
  if (flags.task !== undefined) return targetOfTask(flags.task, home);
  const { task } = requireTask({ cwd, home, includeEnded: true });
  return targetOfTask(task.id, home);
}

export function requireFolder(root: string): void {
  if (!existsSync(root)) {
    throw new AtlasError(`${root} does not exist`, {
      exitCode: EXIT.notFound,
      hint: 'pass the folder to sync with --dir, or a task with --task',
    });
  }
}

/** sync.exclude plus, for a task's own folder, what never leaves the machine. */
export function excludeRules(config: Config, extra: readonly string[] = []): ExcludeRule[] {
  return compileExcludes([...config.sync.exclude, ...extra]);
}

/** Never stored with a task: who runs it here (owner.json) and lock folders. */
export const TASK_FOLDER_EXCLUDES = ['owner.json', '*.lock/', '*.lock', 'keys/', '*.key'];

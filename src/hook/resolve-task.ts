// Which task a command means when no --task is given (docs/commands.md, "Which task"):
// the non-terminal task whose working tree contains the current directory; failing that, the
// non-terminal task started from this repository on the branch checked out here. With
// `includeEnded`, the newest task of this working tree or repository is used as a last resort.
import { AtlasError, EXIT } from '../domain/errors.js';
import { isTerminal } from '../domain/hook-state.js';
import type { Task } from '../domain/task.js';
import { locateWorktree, realpath } from '../git/locate.js';
import { readHookFile } from '../store/hook-file.js';
import { taskFiles } from '../store/paths.js';
import type { TaskRef } from '../store/task-store.js';
import { findTaskRef, listTaskRefs, readTask } from '../store/task-store.js';

export interface ResolveOptions {
  taskId?: string;
  cwd: string;
  home: string;
  /** Fall back to ended tasks (for read-only commands like `hook status`). */
  includeEnded?: boolean;
}

export interface ResolvedTask {
  ref: TaskRef;
  task: Task;
}

function load(ref: TaskRef): { ref: TaskRef; task: Task; live: boolean } | undefined {
  try {
    const task = readTask(ref.dir);
    // hook.json is authoritative for the state; task.json's status is only a mirror.
    let live = !isTerminal(task.status);
    try {
      live = !isTerminal(readHookFile(taskFiles(ref.dir).hook).state);
    } catch {
      // Unreadable hook: trust the mirror.
    }
    return { ref, task, live };
  } catch {
    return undefined;
  }
}

export function resolveTask(options: ResolveOptions): ResolvedTask | undefined {
  if (options.taskId) {
    const ref = findTaskRef(options.taskId, options.home);
    return { ref, task: readTask(ref.dir) };
  }
  const here = locateWorktree(options.cwd);
  if (!here) return undefined;
  const root = here.root;
  const candidates = listTaskRefs(options.home)
    .reverse() // newest first
    .map(load)
    .filter((c): c is NonNullable<typeof c> => c !== undefined);

  const inTree = candidates.filter((c) => realpath(c.task.worktree) === root);
  const onBranch = (c: (typeof candidates)[number]) => here.branch !== undefined && c.task.branch === here.branch;
  const fromRepo = candidates.filter((c) => realpath(c.task.repo_root) === root && onBranch(c));

  const pick =
    inTree.find((c) => c.live && onBranch(c)) ??
    inTree.find((c) => c.live) ??
    fromRepo.find((c) => c.live) ??
    (options.includeEnded ? (inTree[0] ?? candidates.find((c) => realpath(c.task.repo_root) === root)) : undefined);
  return pick ? { ref: pick.ref, task: pick.task } : undefined;
}

export function requireTask(options: ResolveOptions): ResolvedTask {
  const found = resolveTask(options);
  if (found) return found;
  throw new AtlasError(
    options.includeEnded ? 'no atlas task for this directory' : 'no running atlas task owns this directory or branch',
    {
      exitCode: EXIT.notFound,
      hint: 'pass --task ID (see `atlas status`), or run the command inside the task\'s working tree',
    },
  );
}

// Which task a command means when no --task is given (docs/commands.md, "Which task"):
// 1. the non-terminal task whose working tree contains the current directory (preferring one on
//    the branch checked out here);
// 2. else the non-terminal task started from this repository on the branch checked out here;
// 3. unless `strict`, else the only non-terminal task started from this repository (so `atlas
//    resume` in the main checkout finds the task running in its own worktree);
// 4. with `includeEnded` (read-only commands), else the newest task of this working tree, else
//    the newest task started from this repository.
// Checkpoints resolve strictly: a commit in the main checkout must never land on a task whose
// work happens in another tree.
// Candidates are chosen by task.json alone (small; HookManager keeps its status equal to the
// hook's state), so resolving never parses a hook. Commands that write re-check the hook's state
// under its lock.
import { AtlasError, EXIT } from '../domain/errors.js';
import { isTerminal } from '../domain/hook-state.js';
import type { Task } from '../domain/task.js';
import { locateWorktree, realpath } from '../git/locate.js';
import type { TaskRef } from '../store/task-store.js';
import { findTaskRef, listTaskRefs, readTask } from '../store/task-store.js';

export interface ResolveOptions {
  taskId?: string;
  cwd: string;
  home: string;
  /** Fall back to ended tasks (for read-only commands like `hook status`). */
  includeEnded?: boolean;
  /** Only this working tree or branch (rules 1-2): for checkpoints. */
  strict?: boolean;
}

export interface ResolvedTask {
  ref: TaskRef;
  task: Task;
}

interface Candidate extends ResolvedTask {
  tree: string;
  repo: string;
}

function load(ref: TaskRef): Candidate | undefined {
  try {
    const task = readTask(ref.dir);
    return { ref, task, tree: realpath(task.worktree), repo: realpath(task.repo_root) };
  } catch {
    return undefined;
  }
}

const isLive = (c: Candidate) => !isTerminal(c.task.status);

export function resolveTask(options: ResolveOptions): ResolvedTask | undefined {
  if (options.taskId) {
    const ref = findTaskRef(options.taskId, options.home);
    return { ref, task: readTask(ref.dir) };
  }
  const here = locateWorktree(options.cwd);
  if (!here) return undefined;
  const candidates = listTaskRefs(options.home)
    .reverse() // newest first
    .map(load)
    .filter((c): c is Candidate => c !== undefined && (c.tree === here.root || c.repo === here.root));

  const onBranch = (c: Candidate) => here.branch !== undefined && c.task.branch === here.branch;
  const inTree = candidates.filter((c) => c.tree === here.root);
  const ordered = [
    ...inTree.filter(onBranch),
    ...inTree.filter((c) => !onBranch(c)),
    ...candidates.filter((c) => c.tree !== here.root && onBranch(c)),
  ];
  const live = ordered.find(isLive);
  if (live) return { ref: live.ref, task: live.task };
  if (!options.strict) {
    const liveFromRepo = candidates.filter((c) => c.repo === here.root && isLive(c));
    if (liveFromRepo.length === 1) return { ref: liveFromRepo[0]!.ref, task: liveFromRepo[0]!.task };
  }
  if (!options.includeEnded) return undefined;
  const ended = inTree[0] ?? candidates[0];
  return ended ? { ref: ended.ref, task: ended.task } : undefined;
}

export function requireTask(options: ResolveOptions): ResolvedTask {
  const found = resolveTask(options);
  if (found) return found;
  throw new AtlasError(options.includeEnded ? 'no atlas task for this directory' : 'no running atlas task owns this directory or branch', {
    exitCode: EXIT.notFound,
    hint: "pass --task ID (see `atlas status`), or run the command inside the task's working tree",
  });
}

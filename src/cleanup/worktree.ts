// Whether a cleaned task's worktree may go, and removing it through git. A worktree is removed only
// when it is a linked worktree of the task's repository, not locked, not used by a task that stays,
// and holds no uncommitted work (modified, staged or untracked files). Its branch and commits stay.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../domain/task.js';
import { commonGitDir } from '../git/common-dir.js';
import { locateWorktree, realpath } from '../git/locate.js';
import { runGit } from '../git/run-git.js';
import { readGitState } from '../git/state.js';
import { directorySize } from './dir-size.js';

export type WorktreeAssessment =
  /** Nothing to do: the task ran in the repository itself (in place). */
  | { action: 'none' }
  /** Already gone; only git's record of it is pruned. */
  | { action: 'missing'; path: string }
  | { action: 'keep'; path: string; reason: string }
  /** Clean and unused: removed with the task. `bytes` counts the tree and git's admin folder. */
  | { action: 'remove'; path: string; bytes: number };

/** The folder a task runs in, when it is separate from the repository (else undefined). */
export function separateWorktree(task: Task): string | undefined {
  if (task.in_place || !task.worktree) return undefined;
  const path = realpath(task.worktree);
  return path === realpath(task.repo_root) ? undefined : path;
}

function describeChanges(paths: string[]): string {
  const shown = paths.slice(0, 3).join(', ');
  const more = paths.length > 3 ? ` and ${paths.length - 3} more` : '';
  return `uncommitted work in ${paths.length} file${paths.length === 1 ? '' : 's'} (${shown}${more})`;
}

/**
 * Decides what happens to `task`'s worktree. `usedBy` names the tasks that stay and use the same
 * folder. Reads only (one `git status`, which takes no lock).
 */
export async function assessWorktree(task: Task, usedBy: readonly string[]): Promise<WorktreeAssessment> {
  const path = separateWorktree(task);
  if (path === undefined) return { action: 'none' };
  if (!existsSync(path)) return { action: 'missing', path };
  if (usedBy.length > 0) return { action: 'keep', path, reason: `still used by ${usedBy.join(', ')}` };
  const repoRoot = realpath(task.repo_root);
  const repo = existsSync(repoRoot) ? locateWorktree(repoRoot) : undefined;
  if (!repo) return { action: 'keep', path, reason: `its repository ${task.repo_root} is gone, so git cannot remove it safely` };
  const tree = locateWorktree(path);
  if (!tree || tree.root !== path || !existsSync(join(path, '.git')) || tree.gitDir === join(path, '.git')) {
    return { action: 'keep', path, reason: `it is not a linked git worktree of ${repoRoot}` };
  }
  if (commonGitDir(tree.gitDir) !== commonGitDir(repo.gitDir)) {
    return { action: 'keep', path, reason: `it is a worktree of another repository than ${repoRoot}` };
  }
  if (existsSync(join(tree.gitDir, 'locked'))) {
    return { action: 'keep', path, reason: 'it is locked (`git worktree lock`); unlock it to let cleanup remove it' };
  }
  let state;
  try {
    state = await readGitState(path);
  } catch (error) {
    return { action: 'keep', path, reason: `its git state could not be read: ${(error as Error).message}` };
  }
  if (state.dirty) return { action: 'keep', path, reason: describeChanges(state.changed) };
  return { action: 'remove', path, bytes: directorySize(path) + directorySize(tree.gitDir) };
}

/** `git worktree remove` (never forced: git refuses if work appeared meanwhile), then prune. */
export async function removeWorktree(repoRoot: string, path: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  const result = await runGit(repoRoot, ['worktree', 'remove', path], { allowFailure: true });
  if (result.code !== 0) {
    return { ok: false, reason: `git worktree remove refused: ${(result.stderr.trim() || result.stdout.trim()).replace(/^fatal: /, '')}` };
  }
  await pruneWorktrees(repoRoot);
  return { ok: true };
}

export async function pruneWorktrees(repoRoot: string): Promise<void> {
  if (existsSync(repoRoot)) await runGit(repoRoot, ['worktree', 'prune'], { allowFailure: true });
}

// Whether a cleaned task's worktree may go, and removing it through git. A worktree is removed only
// when it is a linked worktree of the task's repository, not locked, not used by a task that stays,
// and holds no uncommitted work (modified, staged or untracked files) and no ignored files other
// than the dependency links atlas made (unless --include-ignored). Its branch and commits stay.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../domain/task.js';
import { DEPENDENCY_FOLDERS } from '../engine/link-dependencies.js';
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
  /**
   * Clean and unused: removed with the task. `bytes` counts the tree and git's admin folder;
   * `ignored` lists the ignored files and folders that go with it (only with --include-ignored).
   */
  | { action: 'remove'; path: string; bytes: number; ignored: string[] };

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
export async function assessWorktree(
  task: Task,
  usedBy: readonly string[],
  options: { includeIgnored?: boolean } = {},
): Promise<WorktreeAssessment> {
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
  let state: Awaited<ReturnType<typeof readGitState>>;
  try {
    state = await readGitState(path);
  } catch (error) {
    return { action: 'keep', path, reason: `its git state could not be read: ${(error as Error).message}` };
  }
  if (state.dirty) return { action: 'keep', path, reason: describeChanges(state.changed) };
  // `git worktree remove` deletes ignored files without asking (a .env, local settings, build
  // output): they are the user's too, so such a worktree stays unless they are let go explicitly.
  let ignored: string[];
  try {
    ignored = await ignoredPaths(path);
  } catch (error) {
    return { action: 'keep', path, reason: `its ignored files could not be listed: ${(error as Error).message}` };
  }
  if (ignored.length > 0 && !options.includeIgnored) {
    const shown = ignored.slice(0, 10).join(', ');
    const more = ignored.length > 10 ? ` and ${ignored.length - 10} more` : '';
    return {
      action: 'keep',
      path,
      reason: `it holds ignored files that removing it would delete (${shown}${more}); pass --include-ignored to delete them too`,
    };
  }
  return { action: 'remove', path, bytes: directorySize(path) + directorySize(tree.gitDir), ignored };
}

/** A dependency folder atlas linked (linkDependencyFolders): a real folder of symbolic links only. */
function isLinkedDependencyFolder(worktree: string, entry: string): boolean {
  const name = entry.replace(/\/$/, '');
  if (!DEPENDENCY_FOLDERS.includes(name)) return false;
  try {
    return readdirSync(join(worktree, name), { withFileTypes: true }).every((d) => d.isSymbolicLink());
  } catch {
    return false;
  }
}

/** Ignored files and folders of a worktree (folders as "name/"), except the dependency links atlas made. */
export async function ignoredPaths(worktree: string): Promise<string[]> {
  const listed = await runGit(worktree, ['ls-files', '--others', '--ignored', '--exclude-standard', '--directory', '-z']);
  return listed.stdout.split('\0').filter((p) => p.length > 0 && !isLinkedDependencyFolder(worktree, p));
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

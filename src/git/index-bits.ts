// Index entries git is told not to compare with the files (skip-worktree, assume-unchanged): with
// one set, `git status` calls a tree clean that is not the committed tree, so a receipt must not
// sign git_dirty: false on it.
import { runGit } from './run-git.js';

/** Paths whose index entry has the skip-worktree or assume-unchanged bit (`git ls-files -v`). */
export async function hiddenIndexEntries(worktree: string): Promise<string[]> {
  const { stdout, code } = await runGit(worktree, ['ls-files', '-v', '-z'], { allowFailure: true });
  if (code !== 0) return [];
  return stdout
    .split('\0')
    .filter((e) => e.length > 2 && (e[0] === 'S' || e[0] !== e[0]!.toUpperCase()))
    .map((e) => e.slice(2));
}

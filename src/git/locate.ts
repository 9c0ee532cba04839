// Finds the working tree and branch around a directory from the files git keeps, without
// spawning git: `atlas status` and hooks run this on every call.
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

export interface WorktreeLocation {
  /** Top of the working tree (realpath). */
  root: string;
  /** The tree's git directory (.git, or .git/worktrees/<name> for a linked worktree). */
  gitDir: string;
  /** Checked-out branch, or undefined when HEAD is detached. */
  branch: string | undefined;
}

export function realpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

export function locateWorktree(from: string): WorktreeLocation | undefined {
  let dir = realpath(from);
  for (;;) {
    const dotGit = join(dir, '.git');
    if (existsSync(dotGit)) {
      const gitDir = resolveGitDir(dotGit, dir);
      if (gitDir) return { root: dir, gitDir, branch: readBranch(gitDir) };
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The git directory a tree's `.git` names: itself when a folder, the `gitdir:` target when a file. */
export function resolveGitDir(dotGit: string, root: string): string | undefined {
  try {
    if (statSync(dotGit).isDirectory()) return dotGit;
    const text = readFileSync(dotGit, 'utf8');
    const match = /^gitdir:\s*(.+)$/m.exec(text);
    if (!match) return undefined;
    const target = match[1]!.trim();
    return isAbsolute(target) ? target : resolve(root, target);
  } catch {
    return undefined;
  }
}

export function readBranch(gitDir: string): string | undefined {
  try {
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    const match = /^ref:\s*refs\/heads\/(.+)$/.exec(head);
    return match ? match[1] : undefined;
  } catch {
    return undefined;
  }
}

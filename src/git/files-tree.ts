// Trees of a working tree's files as they are on disk, and copies of a tree into a folder, both
// through a temporary index: the real index, HEAD and the files stay untouched.
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gitLayout } from './layout.js';
import { runGit } from './run-git.js';
import { ensureObjectDir, overlayEnv } from './task-objects.js';

/**
 * With `store`, the objects of the files go there (over the repository's, read as an alternate)
 * and not into the repository, where another task's step could read them.
 */
/** Git's environment to read and write `store` over the repository's objects (none without a store). */
export function storeEnv(worktree: string, store: string | undefined): Record<string, string> {
  const layout = store ? gitLayout(worktree) : undefined;
  return layout && store ? overlayEnv(layout.common, ensureObjectDir(store)) : {};
}

/**
 * Copies the real index to `target`, keeping its mtime: git tells a file edited in the same
 * second as the index was written (same size) from an unchanged one by comparing with that mtime,
 * and a fresh mtime would make such an edit look unchanged ("racy git"). Starting from the real
 * index keeps git's stat cache, so only changed files are hashed. False when there is no index.
 */
export async function copyIndex(worktree: string, target: string): Promise<boolean> {
  const indexPath = resolve(worktree, (await runGit(worktree, ['rev-parse', '--git-path', 'index'])).stdout.trim());
  if (!existsSync(indexPath)) return false;
  copyFileSync(indexPath, target);
  const { atime, mtime } = statSync(indexPath);
  utimesSync(target, atime, mtime);
  return true;
}

/** The tree of every file git would commit with `git add -A` (tracked and new; ignored ones left out). */
export async function filesTree(worktree: string, store?: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-tree-'));
  try {
    const index = join(dir, 'index');
    await copyIndex(worktree, index);
    const env = { ...storeEnv(worktree, store), GIT_INDEX_FILE: index };
    await runGit(worktree, ['add', '-A', '--', '.'], { env });
    return (await runGit(worktree, ['write-tree'], { env })).stdout.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Writes `tree`'s files into the empty folder `dest` (no .git: a plain copy). Runs no hook and no
 * filter beyond atlas's safe git configuration (src/git/safe-config.ts).
 */
export async function checkoutTree(worktree: string, tree: string, dest: string, store?: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-checkout-'));
  try {
    const env = { ...storeEnv(worktree, store), GIT_INDEX_FILE: join(dir, 'index') };
    await runGit(worktree, ['read-tree', tree], { env });
    await runGit(worktree, ['checkout-index', '--all', '--force', `--prefix=${dest.endsWith('/') ? dest : `${dest}/`}`], { env });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The reflogs a sandboxed step writes (its branch's and its worktree's HEAD's) name commits of the
// step's store: an amended commit is named there and nowhere else. Their ids cross with the
// branch (else `git fsck` and `git gc` in the person's repository meet entries naming objects it
// lacks); after a refused crossing, the entries naming objects that never crossed are dropped.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../store/atomic-write.js';
import type { GitLayout } from './layout.js';
import { runGit } from './run-git.js';

const ID = /^[0-9a-f]{40,64}$/;

/** The reflog files of the task: its branch's (shared folder) and its worktree's HEAD's. */
export function taskReflogs(layout: GitLayout, branch: string): string[] {
  return [...(branch === 'HEAD' ? [] : [join(layout.common, 'logs', 'refs', 'heads', branch)]), join(layout.gitDir, 'logs', 'HEAD')];
}

function lines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.length > 0);
  } catch {
    return [];
  }
}

/** Every commit id the reflogs name (old and new of each entry), the zero id left out. */
export function reflogIds(files: readonly string[]): string[] {
  const out = new Set<string>();
  for (const file of files) {
    for (const line of lines(file)) {
      for (const id of line.split(' ', 2)) if (ID.test(id) && !/^0+$/.test(id)) out.add(id);
    }
  }
  return [...out];
}

/** Drops the entries naming an id (old or new) the repository lacks (after a refused crossing). */
export async function dropMissingEntries(worktree: string, files: readonly string[]): Promise<void> {
  const ids = reflogIds(files);
  if (ids.length === 0) return;
  const { stdout } = await runGit(worktree, ['cat-file', '--batch-check=%(objectname)', '--buffer'], {
    allowFailure: true,
    input: `${ids.join('\n')}\n`,
  });
  const present = new Set(
    stdout
      .split('\n')
      .filter((l) => ID.test(l.trim()))
      .map((l) => l.trim()),
  );
  for (const file of files) {
    const all = lines(file);
    const kept = all.filter((line) => line.split(' ', 2).every((id) => present.has(id) || /^0+$/.test(id)));
    if (kept.length !== all.length) writeFileAtomic(file, kept.length ? `${kept.join('\n')}\n` : '');
  }
}

// Which repository a working tree belongs to, from files alone (no git process): the main tree
// and all its linked worktrees share one common git directory.
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { realpath } from './locate.js';

/** The common git directory (realpath) of the tree whose git directory is `gitDir`. */
export function commonGitDir(gitDir: string): string {
  try {
    const text = readFileSync(join(gitDir, 'commondir'), 'utf8').trim();
    if (text.length > 0) return realpath(isAbsolute(text) ? text : resolve(gitDir, text));
  } catch {
    // No commondir file: gitDir is the main repository's own git directory.
  }
  return realpath(gitDir);
}

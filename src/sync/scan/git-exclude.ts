// A synced folder that is a git working tree must not commit atlas's state file: `git` steps stage
// everything. The pattern goes into the repository's own `info/exclude` (never a tracked
// .gitignore), once.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commonGitDir } from '../../git/common-dir.js';
import { locateWorktree, realpath } from '../../git/locate.js';
import { mkdirForPerson } from '../../store/private-umask.js';

export const EXCLUDE_LINE = '/.sandbox-state*';

export function excludeStateFromGit(root: string): void {
  const here = locateWorktree(root);
  if (!here || here.root !== realpath(root)) return;
  const file = join(commonGitDir(here.gitDir), 'info', 'exclude');
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // No exclude file yet.
  }
  if (text.split('\n').includes(EXCLUDE_LINE)) return;
  try {
    mkdirForPerson(join(file, '..'));
    appendFileSync(
      file,
      `${text.length > 0 && !text.endsWith('\n') ? '\n' : ''}# atlas workspace sync state (docs/sync.md)\n${EXCLUDE_LINE}\n`,
    );
  } catch {
    // A read-only repository: the state file then shows as untracked, which is all that is lost.
  }
}

// The git folders atlas's own git uses for a tree, derived from the layout git itself makes, and
// refused when a step changed it. A main tree's `.git` folder never holds `commondir`; a linked
// worktree's git folder is `<common>/worktrees/<name>` and its `commondir` names that `<common>`;
// a submodule's is under a `modules/` folder with no `commondir`. Anything else (a planted
// `commondir`, a `.git` file naming a folder of the step's choosing) would make git read another
// config and run its hooks and filters: atlas stops instead of running git there. The folders are
// then pinned (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE) so no file in the tree redirects them.
import { readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { locateWorktree, realpath } from './locate.js';

export interface GitLayout {
  root: string;
  gitDir: string;
  common: string;
}

/** The layout around `cwd`, or undefined outside a working tree (git init, a bare folder). */
export function gitLayout(cwd: string): GitLayout | undefined {
  const found = locateWorktree(cwd);
  if (!found) return undefined;
  const gitDir = realpath(found.gitDir);
  const pointer = realpath(join(found.root, '.git')) !== gitDir;
  if (pointer && basename(dirname(gitDir)) !== 'worktrees' && !gitDir.split('/').includes('modules')) {
    throw new AtlasError(
      `the git layout of ${found.root} changed: its .git names ${gitDir}, neither a linked worktree's nor a submodule's git folder; atlas runs no git there`,
      {
        exitCode: EXIT.failure,
        hint: `look at ${join(found.root, '.git')}: a step may have replaced it; restore it, then \`atlas recover\``,
      },
    );
  }
  let text: string | undefined;
  try {
    text = readFileSync(join(gitDir, 'commondir'), 'utf8').trim();
  } catch {
    text = undefined;
  }
  if (text === undefined) return { root: found.root, gitDir, common: gitDir };
  const named = realpath(isAbsolute(text) ? text : resolve(gitDir, text));
  const expected = realpath(dirname(dirname(gitDir)));
  if (basename(dirname(gitDir)) !== 'worktrees' || named !== expected) {
    throw new AtlasError(
      `the git layout of ${found.root} changed: ${join(gitDir, 'commondir')} names ${named}, which is not the repository this tree belongs to (a step may have written git's control files); atlas runs no git there`,
      {
        exitCode: EXIT.failure,
        hint: `look at that file and remove it if you did not make it (rm ${join(gitDir, 'commondir')}), then \`atlas recover\``,
      },
    );
  }
  return { root: found.root, gitDir, common: named };
}

/** The environment that pins atlas's git to the layout's folders. */
export function layoutEnv(layout: GitLayout | undefined): Record<string, string> {
  if (!layout) return {};
  return { GIT_DIR: layout.gitDir, GIT_COMMON_DIR: layout.common, GIT_WORK_TREE: layout.root };
}

// Git metadata a sandboxed step must not change. atlas (checkpoints, the git step, recovery) and
// the user run git on the worktree outside the sandbox afterwards, and git runs commands that its
// configuration names (core.fsmonitor, filters, hooks, gpg.program, ...). A step that could
// redirect the tree's `.git` pointer, its `commondir`, a submodule's pointer or a submodule's
// config would have those commands run unsandboxed. The library itself protects `.git/config`
// and `.git/hooks` of a tree whose `.git` is a folder; this covers what it does not.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { realpath, resolveGitDir } from '../../git/locate.js';

/** How far the walk of submodule git folders goes (nested modules), and how many it protects. */
const MAX_DEPTH = 6;
const MAX_MODULES = 500;

export function gitProtectedPaths(worktree: string): string[] {
  const dotGit = join(worktree, '.git');
  let isFolder: boolean;
  try {
    isFolder = statSync(dotGit).isDirectory();
  } catch {
    return [];
  }
  const gitDir = resolveGitDir(dotGit, worktree);
  if (!gitDir) return [dotGit];
  const dir = realpath(gitDir);
  const out = isFolder
    ? // The main tree (a task in place): other worktrees' pointers live in worktrees/.
      existing([join(dir, 'worktrees'), join(dir, 'config.worktree'), join(dir, 'commondir')])
    : [dotGit, ...existing([join(dir, 'commondir'), join(dir, 'gitdir'), join(dir, 'config.worktree'), join(dir, 'config')])];
  return [...out, ...moduleProtections(join(dir, 'modules')), ...submodulePointers(worktree)];
}

function existing(paths: string[]): string[] {
  return paths.filter((p) => existsSync(p));
}

/**
 * The git folders of submodules (`<gitdir>/modules/<name>`, nested ones in theirs): each one's
 * config, hooks and pointers. With no modules folder yet, the folder itself, so a step cannot
 * plant one that a submodule pointer then names.
 */
export function moduleProtections(modules: string): string[] {
  if (!existsSync(modules)) return [modules];
  const out: string[] = [];
  let count = 0;
  const walk = (dir: string, depth: number) => {
    if (depth > MAX_DEPTH || count >= MAX_MODULES) return;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    if (names.includes('HEAD') && names.includes('objects')) {
      count++;
      out.push(join(dir, 'config'), join(dir, 'hooks'), ...existing([join(dir, 'config.worktree'), join(dir, 'commondir'), join(dir, 'gitdir')]));
      if (names.includes('modules')) walk(join(dir, 'modules'), depth + 1);
      return;
    }
    // A name with slashes ("lib/vendor") is a folder path: keep looking below.
    for (const name of names) {
      const child = join(dir, name);
      try {
        if (statSync(child).isDirectory()) walk(child, depth + 1);
      } catch {
        // gone meanwhile
      }
    }
  };
  walk(modules, 0);
  return out;
}

/** The `.git` of each submodule listed in `.gitmodules` that has one in this tree. */
function submodulePointers(worktree: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(worktree, '.gitmodules'), 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const match of text.matchAll(/^\s*path\s*=\s*(.+?)\s*$/gm)) {
    const path = normalize(match[1]!.replace(/^"(.*)"$/, '$1'));
    if (isAbsolute(path) || path.startsWith('..')) continue;
    const pointer = join(worktree, path, '.git');
    if (existsSync(pointer)) out.push(pointer);
  }
  return out;
}

// Git metadata a sandboxed step must not change. atlas (checkpoints, the git step, recovery) and
// the user run git on the worktree outside the sandbox afterwards, and git runs commands that its
// configuration names (core.fsmonitor, filters, hooks, gpg.program, ...). A step that could
// redirect the tree's `.git` pointer, its `commondir`, a submodule's pointer or a submodule's
// config would have those commands run unsandboxed. The list itself is protected-paths.ts; this
// resolves it for one tree and adds submodules and a core.hooksPath inside the tree.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize, relative } from 'node:path';
import { commonGitDir } from '../../git/common-dir.js';
import { readBranch, realpath, resolveGitDir } from '../../git/locate.js';
import { gitControlPaths } from './protected-paths.js';

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
  const folders = { gitDir: dir, common: commonGitDir(dir), branch: readBranch(dir) };
  const out = [...(isFolder ? [] : [dotGit]), ...gitControlPaths(folders, !isFolder), ...hooksPathInTree(folders.common, worktree)];
  return [...new Set([...out, ...moduleProtections(join(dir, 'modules')), ...submodulePointers(worktree)])];
}

/** A core.hooksPath (the repository's config) that names a folder in the tree: a step could fill it. */
export function hooksPathInTree(common: string, worktree: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(common, 'config'), 'utf8');
  } catch {
    return [];
  }
  const value = /^\s*hookspath\s*=\s*"?([^"\n]+?)"?\s*$/im.exec(text)?.[1];
  if (!value) return [];
  const path = isAbsolute(value) ? value : join(worktree, value);
  const rel = relative(worktree, path);
  return rel.startsWith('..') || isAbsolute(rel) ? [] : [path];
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
      out.push(
        join(dir, 'config'),
        join(dir, 'hooks'),
        ...existing([join(dir, 'config.worktree'), join(dir, 'commondir'), join(dir, 'gitdir')]),
      );
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

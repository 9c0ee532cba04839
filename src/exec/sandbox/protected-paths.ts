// The one list of paths a sandboxed step may not write, each with its reason (mirrored in
// docs/security.md). Whatever a step can write, atlas's own git, the template's git step, Claude
// Code started by a person and the user's next `git status` later read outside the sandbox: inside
// git's folders and in files other programs execute, writes are denied by default and allowed by
// need (objects, the task's own branch ref and reflog, its worktree's index and HEAD).
//
// A path that does not exist yet is protected too. In git's folders atlas first makes an empty
// placeholder (an empty file or folder git reads as "nothing"), because bubblewrap's stand-in for an
// absent path is unreadable and git fails on it. `commondir` is the exception (git refuses an empty
// one): it is checked after each step instead (src/git/layout.ts). In the tree, an absent path gets
// bubblewrap's stub, removed when the command ends (litter.ts).
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

export interface ProtectedPath {
  /** Relative to the folder `in` names. */
  path: string;
  /** The common git folder, the tree's own git folder, the tree, Claude Code's config folder. */
  in: 'common' | 'gitdir' | 'tree' | 'claude-config';
  kind: 'file' | 'dir';
  /** Only when it already exists (git cannot use a placeholder of it). */
  existingOnly?: boolean;
  reason: string;
}

export const PROTECTED_PATHS: readonly ProtectedPath[] = [
  {
    path: 'config',
    in: 'common',
    kind: 'file',
    reason: 'names programs git runs (core.hooksPath, core.fsmonitor, filters, textconv, core.sshCommand, include.path)',
  },
  {
    path: 'config.worktree',
    in: 'common',
    kind: 'file',
    reason: 'read as config when extensions.worktreeConfig is set (git sparse-checkout sets it)',
  },
  { path: 'config.worktree', in: 'gitdir', kind: 'file', reason: "a linked worktree's own config (same as config)" },
  {
    path: 'commondir',
    in: 'common',
    kind: 'file',
    existingOnly: true,
    reason: 'redirects git to another git folder, with its own config and hooks',
  },
  {
    path: 'commondir',
    in: 'gitdir',
    kind: 'file',
    existingOnly: true,
    reason: 'redirects git to another git folder, with its own config and hooks',
  },
  { path: 'gitdir', in: 'gitdir', kind: 'file', existingOnly: true, reason: 'where git thinks the linked worktree lives' },
  { path: 'hooks', in: 'common', kind: 'dir', reason: 'programs git runs on commit, checkout, merge, push' },
  {
    path: 'info',
    in: 'common',
    kind: 'dir',
    reason: 'info/attributes selects filters and diff drivers; info/exclude, info/sparse-checkout',
  },
  { path: 'packed-refs', in: 'common', kind: 'file', reason: "every branch and tag: a step could move the user's main" },
  { path: 'refs/tags', in: 'common', kind: 'dir', reason: 'tags other people and programs trust' },
  { path: 'refs/remotes', in: 'common', kind: 'dir', reason: 'what the user believes is on the remote' },
  { path: 'refs/notes', in: 'common', kind: 'dir', reason: 'notes shown by git log' },
  { path: 'refs/replace', in: 'common', kind: 'dir', reason: 'replaces any object for every later git command' },
  { path: 'objects/info/alternates', in: 'common', kind: 'file', reason: "adds object stores of the step's choosing" },
  { path: 'remotes', in: 'common', kind: 'dir', existingOnly: true, reason: 'old-style remote definitions (URLs git fetches from)' },
  { path: 'branches', in: 'common', kind: 'dir', existingOnly: true, reason: 'old-style remote definitions' },
  { path: '.git', in: 'tree', kind: 'file', existingOnly: true, reason: "a linked worktree's pointer to its git folder" },
  {
    path: '.claude/settings.json',
    in: 'tree',
    kind: 'file',
    reason: 'Claude Code hooks, run by the next unsandboxed `claude` in this tree',
  },
  {
    path: '.claude/settings.local.json',
    in: 'tree',
    kind: 'file',
    reason: 'Claude Code hooks, run by the next unsandboxed `claude` in this tree',
  },
  { path: '.claude/hooks', in: 'tree', kind: 'dir', reason: 'scripts Claude Code settings name as hooks' },
  { path: '.mcp.json', in: 'tree', kind: 'file', reason: 'MCP servers Claude Code starts' },
  { path: '.envrc', in: 'tree', kind: 'file', reason: 'direnv runs it on entering the folder' },
  { path: '.npmrc', in: 'tree', kind: 'file', reason: 'npm configuration: script shell, registries, tokens' },
  { path: '.gitattributes', in: 'tree', kind: 'file', reason: 'selects git filters and diff drivers' },
  {
    path: '.atlas',
    in: 'tree',
    kind: 'dir',
    reason: 'atlas configuration and templates (lifecycle hooks, git.pr_command run outside the sandbox)',
  },
  { path: 'settings.json', in: 'claude-config', kind: 'file', reason: 'user-level Claude Code hooks, run by every later `claude`' },
  { path: 'settings.local.json', in: 'claude-config', kind: 'file', reason: 'user-level Claude Code hooks, run by every later `claude`' },
];

/** How many of the other branches' loose refs are protected one by one. */
const MAX_REFS = 1000;
/** How deep the tree is searched for nested `.claude` folders. */
const CLAUDE_DEPTH = 8;

export interface GitFolders {
  /** The tree's own git folder (.git, or <common>/worktrees/<name>). */
  gitDir: string;
  common: string;
  /** The checked-out branch (its ref stays writable), if any. */
  branch: string | undefined;
}

/** The path is there (a dangling symlink counts: it is something a mount would land on). */
export function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The git-folder paths of the list for one tree, placeholders made where absent (an empty file or
 * folder means the same to git as none). A placeholder that cannot be made is left out: its
 * absence is then checked after the step (src/git/layout.ts).
 */
export function gitControlPaths(git: GitFolders, linked: boolean): string[] {
  const out: string[] = [];
  for (const entry of PROTECTED_PATHS) {
    if (entry.in !== 'common' && entry.in !== 'gitdir') continue;
    if (entry.in === 'gitdir' && !linked) continue;
    const path = join(entry.in === 'common' ? git.common : git.gitDir, entry.path);
    if (!exists(path)) {
      if (entry.existingOnly || !makePlaceholder(path, entry.kind)) continue;
    }
    out.push(path);
  }
  if (!linked && exists(join(git.common, 'worktrees'))) out.push(join(git.common, 'worktrees'));
  return [...out, ...otherBranchRefs(git)];
}

function makePlaceholder(path: string, kind: 'file' | 'dir'): boolean {
  try {
    mkdirSync(kind === 'dir' ? path : dirname(path), { recursive: true });
    if (kind === 'file') writeFileSync(path, '', { flag: 'wx' });
    return true;
  } catch {
    return exists(path);
  }
}

/** Every loose branch ref but the task's own: the step's commits move only its branch. */
function otherBranchRefs(git: GitFolders): string[] {
  const heads = join(git.common, 'refs', 'heads');
  const own = git.branch ? join(heads, git.branch) : undefined;
  return [...looseRefFiles(heads, MAX_REFS + 1).keys()].filter((p) => p !== own).slice(0, MAX_REFS);
}

/** The files under a refs folder with their mtimes, at most `limit` (the walk stops there). */
export function looseRefFiles(dir: string, limit = MAX_REFS): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (folder: string) => {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      return;
    }
    for (const name of names) {
      if (out.size >= limit) return;
      const path = join(folder, name);
      try {
        const info = lstatSync(path);
        if (info.isDirectory()) walk(path);
        else out.set(path, info.mtimeMs);
      } catch {
        // gone meanwhile
      }
    }
  };
  walk(dir);
  return out;
}

/** The tree paths of the list, existing or not, at the top and in each `.claude` folder found below. */
export function treeControlPaths(worktree: string): string[] {
  // `.git` is git-protect.ts's: a pointer file is protected, a folder is git's own.
  const top = PROTECTED_PATHS.filter((e) => e.in === 'tree' && e.path !== '.git');
  const out = top.filter((e) => !e.existingOnly || exists(join(worktree, e.path))).map((e) => join(worktree, e.path));
  for (const dir of nestedClaudeFolders(worktree)) {
    for (const e of top.filter((p) => p.path.startsWith('.claude/'))) out.push(join(dir, e.path.slice('.claude/'.length)));
  }
  return [...new Set(out)];
}

/** `.claude` folders below the top of the tree (ripgrep, as the sandbox library scans). */
export function nestedClaudeFolders(worktree: string): string[] {
  let listing = '';
  try {
    listing = execFileSync(
      'rg',
      [
        '--files',
        '--hidden',
        '--no-ignore',
        '--max-depth',
        String(CLAUDE_DEPTH),
        '--iglob',
        '**/.claude/**',
        '-g',
        '!**/node_modules/**',
        '-g',
        '!.git/**',
      ],
      {
        cwd: worktree,
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
  } catch (error) {
    // rg exits 1 when nothing matched.
    listing = String((error as { stdout?: unknown }).stdout ?? '');
  }
  const found = new Set<string>();
  for (const line of listing.split('\n')) {
    const parts = line.split('/');
    const at = parts.findIndex((p) => p.toLowerCase() === '.claude');
    if (at > 0) found.add(join(worktree, ...parts.slice(0, at + 1)));
  }
  return [...found].filter((d) => relative(worktree, d) !== '.claude');
}

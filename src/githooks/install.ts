// `atlas hook install` / `atlas hook uninstall`: put atlas's post-commit and pre-push hooks in the
// repository's hooks directory without losing the user's own hooks. A hook already there is moved
// aside to `<name>.atlas-chained` (a rename: same bytes, same mode, same inode) and atlas's hook
// runs it first; uninstall renames it back. Installing again with the same atlas changes nothing.
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { chmodSync, closeSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { mkdirForPerson } from '../store/private-umask.js';
import { currentAtlasLocation } from './atlas-location.js';
import type { HooksLocation } from './hooks-dir.js';
import { locateHooksDir } from './hooks-dir.js';
import type { AtlasLocation, ManagedHook } from './script.js';
import { CHAINED_SUFFIX, isManagedHookText, MANAGED_HOOKS, renderHookScript } from './script.js';

export type InstallAction = 'installed' | 'updated' | 'unchanged';
export type UninstallAction = 'removed' | 'restored' | 'not_installed';

export interface HookInstallResult {
  name: ManagedHook;
  path: string;
  action: InstallAction;
  /** The user's own hook, now run first by atlas's hook. */
  chained?: string;
}

export interface HookUninstallResult {
  name: ManagedHook;
  path: string;
  action: UninstallAction;
  /** Why nothing was done, when action is not_installed and a hook is there. */
  note?: string;
}

export interface InstallReport {
  repo_root: string;
  hooks_dir: string;
  atlas: AtlasLocation;
  hooks: HookInstallResult[];
  warnings: string[];
}

export interface UninstallReport {
  repo_root: string;
  hooks_dir: string;
  hooks: HookUninstallResult[];
  warnings: string[];
}

export interface HookStatus {
  name: ManagedHook;
  path: string;
  /** atlas's hook is in place. */
  installed: boolean;
  /** It is exactly what this atlas would install (false: another atlas install, or an older one). */
  current: boolean;
  /** A user hook is chained behind it. */
  chained: boolean;
}

export interface GitHooksStatus {
  repo_root: string;
  hooks_dir: string;
  hooks: HookStatus[];
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isManagedFile(path: string, stat: Stats | undefined, name: ManagedHook): boolean {
  if (!stat?.isFile()) return false;
  try {
    return isManagedHookText(readFileSync(path, 'utf8'), name);
  } catch {
    return false;
  }
}

/** A durable executable file next to `path`, not yet in place. */
function writeTemp(path: string, text: string): string {
  const temp = join(dirname(path), `.${basename(path)}.atlas-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o755);
  try {
    const data = Buffer.from(text, 'utf8');
    let offset = 0;
    while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    unlinkSync(temp);
    throw error;
  }
  closeSync(fd);
  // The umask may have removed bits; the owner must at least be able to run it.
  chmodSync(temp, 0o755);
  return temp;
}

/** Throws when installing `name` could overwrite something of the user's. Changes nothing. */
function refuseConflict(path: string, name: ManagedHook): void {
  const stat = lstatOrUndefined(path);
  const chainedPath = path + CHAINED_SUFFIX;
  if (stat?.isDirectory()) {
    throw new AtlasError(`${path} is a directory, not a hook`, {
      exitCode: EXIT.input,
      hint: 'move it away, then run `atlas hook install` again',
    });
  }
  if (stat && !isManagedFile(path, stat, name) && lstatOrUndefined(chainedPath)) {
    throw new AtlasError(`both ${path} and ${chainedPath} exist, and ${name} is not atlas's hook`, {
      exitCode: EXIT.input,
      hint: `atlas will not overwrite either: merge them into one ${name} hook (or delete the stale ${basename(chainedPath)}), then run \`atlas hook install\` again`,
    });
  }
}

function installOne(hooksDir: string, name: ManagedHook, at: AtlasLocation, warnings: string[]): HookInstallResult {
  const path = join(hooksDir, name);
  const chainedPath = path + CHAINED_SUFFIX;
  const script = renderHookScript(name, at);
  const stat = lstatOrUndefined(path);
  const chainedStat = lstatOrUndefined(chainedPath);
  const withChain = (r: HookInstallResult): HookInstallResult => (chainedStat || r.chained ? { ...r, chained: chainedPath } : r);

  refuseConflict(path, name);
  if (stat && isManagedFile(path, stat, name)) {
    if (readFileSync(path, 'utf8') === script) return withChain({ name, path, action: 'unchanged' });
    renameSync(writeTemp(path, script), path);
    return withChain({ name, path, action: 'updated' });
  }
  if (stat) {
    // New script first, then the user's hook aside, then the script in place: git never sees a
    // half-written hook, and a failure puts the user's hook back.
    const temp = writeTemp(path, script);
    try {
      renameSync(path, chainedPath);
    } catch (error) {
      unlinkSync(temp);
      throw error;
    }
    try {
      renameSync(temp, path);
    } catch (error) {
      renameSync(chainedPath, path);
      try {
        unlinkSync(temp);
      } catch {
        /* already gone */
      }
      throw error;
    }
    return { name, path, action: 'installed', chained: chainedPath };
  }
  if (chainedStat) {
    warnings.push(
      `${chainedPath} was left by an earlier install; it runs before atlas's ${name} hook, and \`atlas hook uninstall\` puts it back as ${name}`,
    );
  }
  renameSync(writeTemp(path, script), path);
  return withChain({ name, path, action: 'installed' });
}

function uninstallOne(hooksDir: string, name: ManagedHook, warnings: string[]): HookUninstallResult {
  const path = join(hooksDir, name);
  const chainedPath = path + CHAINED_SUFFIX;
  const stat = lstatOrUndefined(path);
  const chainedStat = lstatOrUndefined(chainedPath);
  if (stat && isManagedFile(path, stat, name)) {
    if (chainedStat) {
      renameSync(chainedPath, path);
      return { name, path, action: 'restored' };
    }
    unlinkSync(path);
    return { name, path, action: 'removed' };
  }
  if (!stat && chainedStat) {
    renameSync(chainedPath, path);
    return { name, path, action: 'restored' };
  }
  if (stat && chainedStat) {
    warnings.push(`${path} is not atlas's hook, so ${chainedPath} was left where it is; merge or delete it by hand`);
  }
  return stat
    ? { name, path, action: 'not_installed', note: 'not installed by atlas; left alone' }
    : { name, path, action: 'not_installed' };
}

function placementWarnings(loc: HooksLocation): string[] {
  const warnings: string[] = [];
  const rel = relative(loc.repoRoot, loc.hooksDir);
  const insideTree = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  if (insideTree && !rel.split(/[\\/]/).includes('.git')) {
    warnings.push(
      `the hooks directory ${loc.hooksDir} (core.hooksPath) is inside the working tree: the atlas hooks show up in \`git status\` there` +
        (loc.hooksPathConfig && !isAbsolute(loc.hooksPathConfig) && !loc.hooksPathConfig.startsWith('~')
          ? `, and because core.hooksPath is relative (${loc.hooksPathConfig}) other worktrees use their own copy of it; run \`atlas hook install\` in each worktree that should record checkpoints`
          : ''),
    );
  }
  return warnings;
}

export interface InstallOptions {
  /** Any directory inside the repository (default: the current directory). */
  repo: string;
  /** Where atlas is (default: this atlas). */
  atlas?: AtlasLocation;
  /** Install even when core.hooksPath comes from global or system config (a folder every repository uses). */
  shared?: boolean;
}

export async function installGitHooks(options: InstallOptions): Promise<InstallReport> {
  const loc = await locateHooksDir(options.repo);
  if ((loc.hooksPathScope === 'global' || loc.hooksPathScope === 'system') && !options.shared) {
    throw new AtlasError(
      `core.hooksPath comes from your ${loc.hooksPathScope} git config: ${loc.hooksDir} is the hooks folder of every repository${loc.hooksPathScope === 'system' ? ' of every user' : ''} on this machine, so installing there affects all of them`,
      {
        exitCode: EXIT.input,
        hint: `pass --shared to install there anyway (commits and pushes in every repository then call atlas, which records checkpoints only in atlas tasks), or give this repository its own: git -C ${loc.repoRoot} config core.hooksPath .git/hooks`,
      },
    );
  }
  const at = options.atlas ?? currentAtlasLocation();
  mkdirForPerson(loc.hooksDir);
  const warnings = placementWarnings(loc);
  // Every conflict is found before anything changes, so a refusal leaves the hooks as they were.
  for (const name of MANAGED_HOOKS) refuseConflict(join(loc.hooksDir, name), name);
  const hooks = MANAGED_HOOKS.map((name) => installOne(loc.hooksDir, name, at, warnings));
  return { repo_root: loc.repoRoot, hooks_dir: loc.hooksDir, atlas: at, hooks, warnings };
}

export async function uninstallGitHooks(options: { repo: string }): Promise<UninstallReport> {
  const loc = await locateHooksDir(options.repo);
  const warnings: string[] = [];
  const hooks = MANAGED_HOOKS.map((name) => uninstallOne(loc.hooksDir, name, warnings));
  return { repo_root: loc.repoRoot, hooks_dir: loc.hooksDir, hooks, warnings };
}

/** Whether atlas's hooks are in place (for `atlas init` and diagnostics). Changes nothing. */
export async function gitHooksStatus(options: { repo: string; atlas?: AtlasLocation }): Promise<GitHooksStatus> {
  const loc = await locateHooksDir(options.repo);
  const at = options.atlas ?? currentAtlasLocation();
  const hooks = MANAGED_HOOKS.map((name): HookStatus => {
    const path = join(loc.hooksDir, name);
    const stat = lstatOrUndefined(path);
    const installed = isManagedFile(path, stat, name);
    return {
      name,
      path,
      installed,
      current: installed && readFileSync(path, 'utf8') === renderHookScript(name, at),
      chained: lstatOrUndefined(path + CHAINED_SUFFIX) !== undefined,
    };
  });
  return { repo_root: loc.repoRoot, hooks_dir: loc.hooksDir, hooks };
}

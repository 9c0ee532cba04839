// Submodules before a reset (issue 8): `git reset --hard` with submodule.recurse=true also resets
// every submodule's files, and the superproject's saved commit holds only the gitlink, not the
// submodule's uncommitted edits. So each initialised submodule's own work is saved first, on an
// atlas/recovery/ branch in the submodule's repository; when that cannot be done, nothing is reset.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { runGit } from '../git/run-git.js';

export interface SubmoduleWork {
  /** Path from the superproject's root, e.g. "lib" or "lib/vendor/x". */
  path: string;
  /** Branch in the submodule's repository holding its work. */
  branch: string;
  commit: string;
  files: string[];
}

interface Submodule {
  path: string;
  dir: string;
}

/** Initialised submodules, nested ones included (uninitialised ones have no files to lose). */
export async function listSubmodules(worktree: string): Promise<Submodule[]> {
  if (!existsSync(join(worktree, '.gitmodules'))) return [];
  const listed = await runGit(worktree, ['submodule', 'status', '--recursive'], { allowFailure: true });
  if (listed.code !== 0) throw refusal(worktree, 'its submodules cannot be listed', listed.stderr.trim());
  const subs: Submodule[] = [];
  for (const line of listed.stdout.split('\n')) {
    const m = /^([ +\-U])([0-9a-f]+) (.+?)(?: \([^()]*\))?$/.exec(line);
    if (!m || m[1] === '-') continue;
    subs.push({ path: m[3]!, dir: join(worktree, m[3]!) });
  }
  return subs;
}

export function refusal(worktree: string, what: string, detail: string): AtlasError {
  return new AtlasError(`cannot save the uncommitted work in ${worktree}: ${what}${detail ? ` (${detail})` : ''}; nothing was reset`, {
    exitCode: EXIT.waiting,
    hint: 'commit or copy the submodule\'s changes yourself (git -C <submodule> status), then run `atlas recover` again; or choose --action retry_step, which keeps the tree as it is',
  });
}

/** The commit the superproject's `target` records for a direct submodule (undefined for nested ones). */
export async function gitlinkAt(worktree: string, target: string | undefined, path: string): Promise<string | undefined> {
  if (target === undefined) return undefined;
  const r = await runGit(worktree, ['rev-parse', '--verify', '--quiet', `${target}:${path}`], { allowFailure: true });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

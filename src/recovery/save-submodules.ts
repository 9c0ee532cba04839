// Submodules before a reset (issue 8): `git reset --hard` with submodule.recurse=true also resets
// every submodule's files, and the superproject's saved commit holds only the gitlink, not the
// submodule's uncommitted edits. So each initialised submodule's own work is saved first, on an
// atlas/recovery/ branch in the submodule's repository; when that cannot be done, nothing is reset.
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { commonGitDir } from '../git/common-dir.js';
import { realpath, resolveGitDir } from '../git/locate.js';
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
  for (const sub of subs) {
    const problem = untrustedGitDir(worktree, sub.dir);
    if (problem) throw refusal(worktree, `submodule ${sub.path} ${problem}, so atlas does not run git in it`, '');
  }
  return subs;
}

/**
 * Saving a submodule's work runs git in it, with its own config (filters, hooks). That config is
 * trusted only where git keeps submodule repositories, `<git dir>/modules/`, which a sandboxed
 * step cannot write (src/exec/sandbox/git-protect.ts); a `.git` of the tree's own (a folder, or a
 * pointer elsewhere) could have been written by the agent.
 */
function untrustedGitDir(worktree: string, dir: string): string | undefined {
  const dotGit = join(dir, '.git');
  try {
    if (statSync(dotGit).isDirectory())
      return 'keeps its repository in its own .git folder (run `git submodule absorbgitdirs` to move it under .git/modules)';
  } catch {
    return 'has no .git';
  }
  const named = resolveGitDir(dotGit, dir);
  const superGitDir = resolveGitDir(join(worktree, '.git'), worktree);
  if (!named || !superGitDir) return 'has a .git that names no git folder';
  const target = realpath(named);
  const own = realpath(superGitDir);
  const roots = [join(own, 'modules'), join(commonGitDir(own), 'modules')];
  return roots.some((root) => isUnder(target, root)) ? undefined : `names a git folder outside the repository's modules folder (${target})`;
}

function isUnder(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

export function refusal(worktree: string, what: string, detail: string): AtlasError {
  return new AtlasError(`cannot save the uncommitted work in ${worktree}: ${what}${detail ? ` (${detail})` : ''}; nothing was reset`, {
    exitCode: EXIT.waiting,
    hint: "commit or copy the submodule's changes yourself (git -C <submodule> status), then run `atlas recover` again; or choose --action retry_step, which keeps the tree as it is",
  });
}

/** The commit the superproject's `target` records for a direct submodule (undefined for nested ones). */
export async function gitlinkAt(worktree: string, target: string | undefined, path: string): Promise<string | undefined> {
  if (target === undefined) return undefined;
  const r = await runGit(worktree, ['rev-parse', '--verify', '--quiet', `${target}:${path}`], { allowFailure: true });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

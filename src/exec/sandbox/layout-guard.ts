// After each sandboxed command: did it change the repository's git layout? The one control file a
// mount cannot keep out is a main tree's `.git/commondir` that does not exist yet (git refuses the
// empty placeholder a mount needs). A step that planted one would redirect every later git command
// in the tree, the user's included, to a git folder of its choosing. atlas moves it into the task
// folder (kept as evidence, nothing of the user's is touched) and stops the task.
import { lstatSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { gitLayout } from '../../git/layout.js';
import { readBranch } from '../../git/locate.js';
import { exists, looseRefFiles } from './protected-paths.js';

export function checkLayoutAfterCommand(
  worktree: string,
  taskDir: string,
  protectedPaths: readonly string[] = [],
  since = 0,
  before?: ReadonlyMap<string, number>,
): AtlasError | undefined {
  const dotGit = join(worktree, '.git');
  let isFolder = false;
  try {
    isFolder = lstatSync(dotGit).isDirectory();
  } catch {
    return undefined;
  }
  const planted = join(dotGit, 'commondir');
  if (isFolder && exists(planted)) {
    const refused = join(taskDir, 'refused');
    const kept = join(refused, `commondir-${Date.now()}`);
    try {
      mkdirSync(refused, { recursive: true, mode: 0o700 });
      renameSync(planted, kept);
    } catch {
      return layoutError(`${planted} appeared and could not be moved away: remove it before running git in ${worktree}`);
    }
    return layoutError(
      `a step wrote ${planted}, which would send every later git command in ${worktree} to another git folder; atlas moved it to ${kept} and stopped the task`,
    );
  }
  let layout: ReturnType<typeof gitLayout>;
  try {
    layout = gitLayout(worktree);
  } catch (error) {
    return error instanceof AtlasError ? error : layoutError(String(error));
  }
  return layout ? strangeRefs(layout, taskDir, protectedPaths, since, before) : undefined;
}

/**
 * A step moves its own branch and nothing else. Refs it may not write are read-only (the other
 * loose branches, packed-refs), but refs/heads itself stays writable (a commit renames its ref's
 * lock there), so a new ref could appear: one shadowing a branch only in packed-refs, a
 * `refs/heads/origin/main` that shadows `origin/main`, a `main.lock` that breaks every later
 * commit on main. Any loose ref that is not in `before` (the refs when the sandbox started) or
 * changed since, and is not the task's branch (or its lock), is moved into the task folder and the
 * task stops. Without `before`, only new refs shadowing a packed-only branch are looked for.
 */
function strangeRefs(
  layout: { gitDir: string; common: string },
  taskDir: string,
  protectedPaths: readonly string[],
  since: number,
  before: ReadonlyMap<string, number> | undefined,
): AtlasError | undefined {
  const heads = join(layout.common, 'refs', 'heads');
  const own = readBranch(layout.gitDir);
  const allowed = new Set(own ? [join(heads, own), join(heads, `${own}.lock`)] : []);
  const kept = new Set(protectedPaths);
  const packed = packedBranches(layout.common);
  const found = [...looseRefFiles(heads)]
    .filter(
      ([p, mtime]) =>
        mtime >= since && !allowed.has(p) && !kept.has(p) && (before ? before.get(p) !== mtime : packed.has(relative(layout.common, p))),
    )
    .map(([p]) => p);
  if (found.length === 0) return undefined;
  const refused = join(taskDir, 'refused');
  const moved: string[] = [];
  for (const loose of found) {
    const ref = relative(layout.common, loose);
    const to = join(refused, `${ref.replace(/\//g, '_')}-${Date.now()}`);
    try {
      mkdirSync(refused, { recursive: true, mode: 0o700 });
      renameSync(loose, to);
      moved.push(`${ref}${packed.has(ref) ? ' (a branch that was only in packed-refs)' : ''} -> ${to}`);
    } catch {
      return layoutError(`a step created ${loose}, which would move ${ref}, and it could not be moved away: remove it`);
    }
  }
  return layoutError(
    `a step created refs outside its branch ${own ?? '(none)'}, which would move or shadow other branches; atlas moved them away and stopped the task: ${moved.join('; ')}`,
  );
}

/** The loose branch refs of the tree's repository with their mtimes (the executor's snapshot). */
export function looseBranchRefs(worktree: string): Map<string, number> {
  try {
    const layout = gitLayout(worktree);
    return layout ? looseRefFiles(join(layout.common, 'refs', 'heads')) : new Map();
  } catch {
    return new Map();
  }
}

function packedBranches(common: string): Set<string> {
  try {
    const text = readFileSync(join(common, 'packed-refs'), 'utf8');
    return new Set([...text.matchAll(/^[0-9a-f]{40,64} (refs\/heads\/\S+)$/gm)].map((m) => m[1]!));
  } catch {
    return new Set();
  }
}

function layoutError(message: string): AtlasError {
  return new AtlasError(`the repository's git layout changed: ${message}`, {
    exitCode: EXIT.failure,
    hint: "a sandboxed step tried to change git's control files; look at what the step ran (HOOK.md) before continuing",
  });
}

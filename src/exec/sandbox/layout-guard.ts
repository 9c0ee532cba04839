// After each sandboxed command: did it change the repository's git layout? The one control file a
// mount cannot keep out is a main tree's `.git/commondir` that does not exist yet (git refuses the
// empty placeholder a mount needs). A step that planted one would redirect every later git command
// in the tree, the user's included, to a git folder of its choosing. atlas moves it into the task
// folder (kept as evidence, nothing of the user's is touched) and stops the task.
import { lstatSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { gitLayout } from '../../git/layout.js';
import { readBranch } from '../../git/locate.js';
import { exists } from './protected-paths.js';

export function checkLayoutAfterCommand(worktree: string, taskDir: string, protectedPaths: readonly string[] = [], since = 0): AtlasError | undefined {
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
    return layoutError(`a step wrote ${planted}, which would send every later git command in ${worktree} to another git folder; atlas moved it to ${kept} and stopped the task`);
  }
  let layout: ReturnType<typeof gitLayout>;
  try {
    layout = gitLayout(worktree);
  } catch (error) {
    return error instanceof AtlasError ? error : layoutError(String(error));
  }
  return layout ? shadowedRefs(layout, taskDir, protectedPaths, since) : undefined;
}

/**
 * A branch that exists only in packed-refs (read-only) has no loose file to protect: a step could
 * create one and so move the branch. Such a new loose ref (not the task's own branch, not one of
 * the refs protected when the sandbox started, written since) is moved into the task folder and
 * the task stops.
 */
function shadowedRefs(layout: { gitDir: string; common: string }, taskDir: string, protectedPaths: readonly string[], since: number): AtlasError | undefined {
  let packed: string;
  try {
    packed = readFileSync(join(layout.common, 'packed-refs'), 'utf8');
  } catch {
    return undefined;
  }
  const own = readBranch(layout.gitDir);
  const kept = new Set(protectedPaths);
  for (const match of packed.matchAll(/^[0-9a-f]{40,64} (refs\/heads\/\S+)$/gm)) {
    const ref = match[1]!;
    const loose = join(layout.common, ref);
    if (ref === `refs/heads/${own}` || kept.has(loose) || !exists(loose) || lstatSync(loose).mtimeMs < since) continue;
    const refused = join(taskDir, 'refused');
    const moved = join(refused, `${ref.replace(/\//g, '_')}-${Date.now()}`);
    try {
      mkdirSync(refused, { recursive: true, mode: 0o700 });
      renameSync(loose, moved);
    } catch {
      return layoutError(`a step created ${loose}, which moves ${ref}, and it could not be moved away: remove it`);
    }
    return layoutError(`a step created ${loose}, which would move ${ref} (a branch that was only in packed-refs); atlas moved it to ${moved} and stopped the task`);
  }
  return undefined;
}

function layoutError(message: string): AtlasError {
  return new AtlasError(`the repository's git layout changed: ${message}`, {
    exitCode: EXIT.failure,
    hint: 'a sandboxed step tried to change git\'s control files; look at what the step ran (HOOK.md) before continuing',
  });
}


// After each sandboxed command: did it change the repository's git layout? The one control file a
// mount cannot keep out is a main tree's `.git/commondir` that does not exist yet (git refuses the
// empty placeholder a mount needs). A step that planted one would redirect every later git command
// in the tree, the user's included, to a git folder of its choosing. atlas moves it into the task
// folder (kept as evidence, nothing of the user's is touched) and stops the task.
import { lstatSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { gitLayout } from '../../git/layout.js';
import { exists } from './protected-paths.js';

export function checkLayoutAfterCommand(worktree: string, taskDir: string): AtlasError | undefined {
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
  try {
    gitLayout(worktree);
  } catch (error) {
    return error instanceof AtlasError ? error : layoutError(String(error));
  }
  return undefined;
}

function layoutError(message: string): AtlasError {
  return new AtlasError(`the repository's git layout changed: ${message}`, {
    exitCode: EXIT.failure,
    hint: 'a sandboxed step tried to change git\'s control files; look at what the step ran (HOOK.md) before continuing',
  });
}


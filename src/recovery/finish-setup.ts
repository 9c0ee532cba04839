// A task whose `atlas start` was killed while it set the task up: the working tree may be missing.
// It follows from task.json alone (the task's branch, or a new one from the commit the task
// started from), so recovery creates it and the task runs from its first step.
import { existsSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Task } from '../domain/task.js';
import { linkDependencyFolders } from '../engine/link-dependencies.js';
import { addWorktree, branchExists } from '../git/create-worktree.js';
import { runGit } from '../git/run-git.js';

/** Creates the task's missing worktree; returns a line saying what was done. */
export async function createMissingWorktree(task: Task): Promise<string> {
  if (task.in_place) {
    throw new AtlasError(`task ${task.id} runs in the checkout ${task.worktree}, which is gone`, {
      exitCode: EXIT.failure,
      hint: `restore the checkout, or run atlas abandon --task ${task.id}`,
    });
  }
  const repo = task.repo_root;
  if (!existsSync(repo)) {
    throw new AtlasError(`the repository of task ${task.id} is gone: ${repo}`, {
      exitCode: EXIT.failure,
      hint: `run atlas abandon --task ${task.id}`,
    });
  }
  // A registration left by the cut-off `git worktree add` would make git refuse the path.
  await runGit(repo, ['worktree', 'prune'], { allowFailure: true });
  const existing = await branchExists(repo, task.branch);
  try {
    if (existing) await runGit(repo, ['worktree', 'add', '--quiet', task.worktree, task.branch]);
    else if (task.base_commit) await addWorktree(repo, task.worktree, task.branch, task.base_commit);
    else
      throw new AtlasError(`task ${task.id} records no commit to start its branch ${task.branch} from`, {
        exitCode: EXIT.failure,
        hint: `run atlas abandon --task ${task.id} and start it again`,
      });
  } catch (error) {
    // The killed start's own `git worktree add` may have finished meanwhile: that is the same tree.
    if (!existsSync(`${task.worktree}/.git`)) throw error;
  }
  await linkDependencyFolders(repo, task.worktree);
  return `Created the missing working tree ${task.worktree} (branch ${task.branch}${existing ? '' : ` from ${task.base_commit?.slice(0, 12)}`}).`;
}

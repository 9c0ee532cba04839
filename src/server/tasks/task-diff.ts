// GET /tasks/{id}/diff: the worktree's changes against the commit the task started from
// (task.json's base_commit), through atlas's own git (no hooks, fsmonitor, external diff drivers
// or textconv filters: the worktree is the agent's), plus the names of untracked files.
import { runGit } from '../../git/run-git.js';
import { readTask } from '../../store/task-store.js';
import { HttpError } from '../http/http.js';

const MAX_DIFF = 2 * 1024 * 1024;

export async function taskDiff(taskDir: string): Promise<{ base: string; diff: string; truncated: boolean; untracked: string[] }> {
  const task = readTask(taskDir);
  const base = task.base_commit;
  if (!base || !/^[0-9a-f]{40,64}$/.test(base))
    throw new HttpError(409, 'no_base_commit', 'this task has no base commit to compare with (started in place, or outside git)');
  const diff = await runGit(task.worktree, ['diff', '--no-ext-diff', '--no-textconv', '--no-color', base, '--'], { allowFailure: true });
  if (diff.code !== 0) throw new HttpError(409, 'diff_failed', "the task's working tree could not be compared with its base commit");
  const others = await runGit(task.worktree, ['ls-files', '--others', '--exclude-standard', '-z'], { allowFailure: true });
  const untracked = others.code === 0 ? others.stdout.split('\0').filter(Boolean).slice(0, 10_000) : [];
  const truncated = diff.stdout.length > MAX_DIFF;
  return { base, diff: truncated ? diff.stdout.slice(0, MAX_DIFF) : diff.stdout, truncated, untracked };
}

// Which task `atlas recover` works on: --task ID; else the only crashed (or interrupted) task;
// with several, a prompt (or, in a script, the list and exit 4 naming --task). Tasks of the
// repository around the current directory come first when there are any.
import { AtlasError, EXIT } from '../domain/errors.js';
import { locateWorktree, realpath } from '../git/locate.js';
import type { TaskRef } from '../store/task-store.js';
import { findTaskRef } from '../store/task-store.js';
import type { SelectFn } from './choose-action.js';
import { isPromptAbort } from './choose-action.js';
import type { CrashedTask, PausedTask } from './detect.js';
import { findRecoverableTasks } from './detect.js';
import { describeRecoverable, renderRecoverableList } from './render.js';

export interface SelectTaskOptions {
  home: string;
  cwd: string;
  taskId?: string;
  interactive: boolean;
  select?: SelectFn;
  graceMs?: number;
}

function ofRepository(tasks: (CrashedTask | PausedTask)[], cwd: string): (CrashedTask | PausedTask)[] {
  const here = locateWorktree(cwd);
  if (!here) return tasks;
  const mine = tasks.filter((t) => t.task && (realpath(t.task.repo_root) === here.root || realpath(t.task.worktree) === here.root));
  return mine.length > 0 ? mine : tasks;
}

/** The task to recover, or undefined when the person aborted the prompt. */
export async function selectTaskToRecover(options: SelectTaskOptions): Promise<TaskRef | undefined> {
  if (options.taskId !== undefined) return findTaskRef(options.taskId, options.home);
  const all = findRecoverableTasks({ home: options.home, ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}) });
  const tasks = ofRepository(all, options.cwd);
  if (tasks.length === 0) {
    throw new AtlasError('no crashed or interrupted task to recover', {
      exitCode: EXIT.notFound,
      hint: 'run `atlas status` to see every task; `atlas recover --task ID` continues a specific one',
    });
  }
  if (tasks.length === 1) return tasks[0]!.ref;
  if (!options.interactive) {
    throw new AtlasError(renderRecoverableList(tasks), { exitCode: EXIT.notFound, hint: 'pass --task ID to choose one' });
  }
  const ask = options.select ?? ((await import('@inquirer/prompts')).select as unknown as SelectFn);
  try {
    return await ask({
      message: 'Several tasks need recovery. Which one?',
      choices: tasks.map((t) => ({ value: t.ref, name: describeRecoverable(t) })),
      pageSize: Math.min(tasks.length, 15),
    });
  } catch (error) {
    if (isPromptAbort(error)) return undefined;
    throw error;
  }
}

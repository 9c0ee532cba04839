// A task runs in the execution mode it started in (task.json's execution_mode) when it is resumed
// or recovered, whatever the configuration's default is by then. A --local or --sandbox flag may
// change it: the task then keeps the new mode, and atlas says so.
import type { ExecutionMode } from '../domain/receipt.js';
import type { Task } from '../domain/task.js';
import { updateTask } from '../store/task-store.js';

/**
 * The execution.mode override for continuing `task` (undefined: a task from before atlas recorded
 * its mode follows the configuration). `say` gets one line when a flag changes the mode.
 */
export async function continuedTaskMode(
  taskDir: string,
  task: Task,
  flag: ExecutionMode | undefined,
  say: (line: string) => void,
): Promise<ExecutionMode | undefined> {
  const started = task.execution_mode;
  if (flag === undefined || flag === started) return started;
  if (started !== undefined) {
    say(`task ${task.id} ran in ${started} mode; --${flag} runs it in ${flag} mode from now on`);
    await updateTask(taskDir, (current) => ({ ...current, execution_mode: flag }));
  }
  return flag;
}

// The hook `atlas start` writes for a new task, which follows from task.json alone: what a start
// killed after task.json and before hook.json would have written (detection judges such a task by
// it, and recovery writes it).
import type { Hook } from '../domain/hook.js';
import { newHook } from '../domain/hook.js';
import type { Task } from '../domain/task.js';

export function initialHook(task: Task): Hook {
  return {
    ...newHook(task.id, task.workspace_id, task.created_at),
    ...(task.task_index !== undefined ? { task_index: task.task_index } : {}),
  };
}

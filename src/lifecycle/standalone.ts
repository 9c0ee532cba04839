// OnTerminate outside a task run: `atlas abandon` and `atlas cleanup` end a task (or remove its
// worktree) without a runner, so they build the task's bus here, emit, and wait for the hooks.
import type { Config } from '../config/schema.js';
import type { Task } from '../domain/task.js';
import { ProcessGroups } from '../engine/processes.js';
import type { LifecycleBuiltins } from './bus.js';
import { baseEvent, lifecycleBusForTask } from './for-task.js';

export interface StandaloneTerminate {
  task: Task;
  taskDir: string;
  config: Config;
  reason: 'abandoned' | 'workspace_removed';
  stepName?: string | null;
  /** Where the workspace was (cleanup: the removed worktree). */
  workspace?: string;
  verbose?: boolean;
  builtins?: LifecycleBuiltins;
  note?: (text: string) => void;
}

export async function emitTerminate(options: StandaloneTerminate): Promise<void> {
  const groups = new ProcessGroups();
  const note = options.note ?? ((text: string) => process.stderr.write(`atlas: ${text}\n`));
  const bus = lifecycleBusForTask({
    task: options.task,
    config: options.config,
    groups,
    reporter: { note },
    verbose: Boolean(options.verbose),
    ...(options.builtins ? { builtins: options.builtins } : {}),
  });
  const base = baseEvent(options.task, options.taskDir, options.stepName ?? null);
  try {
    await bus.terminate({
      ...base,
      ...(options.workspace ? { workspace: options.workspace } : {}),
      point: 'on_terminate',
      reason: options.reason,
    });
    await bus.idle();
  } finally {
    groups.terminateAll();
  }
}

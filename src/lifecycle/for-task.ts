// The bus of one task: its template's `lifecycle:` snapshot (task.json, validated here since the
// file may have been edited by hand) and the configuration's commands.
import type { Config } from '../config/schema.js';
import type { Task } from '../domain/task.js';
import type { LIFECYCLE_HOOK_FIELDS, LifecycleCommands } from '../domain/template.js';
import type { ProcessGroups } from '../engine/processes.js';
import type { LifecycleBuiltins, LifecycleRunner } from './bus.js';
import { createLifecycleBus } from './bus.js';
import type { LifecycleBase, LifecycleNotes, LifecyclePoint } from './types.js';
import { LIFECYCLE_POINTS } from './types.js';

// The domain's field list and the bus's points are one list written twice (domain imports nothing).
const SAME_POINTS: (typeof LIFECYCLE_HOOK_FIELDS)[number] extends LifecyclePoint
  ? LifecyclePoint extends (typeof LIFECYCLE_HOOK_FIELDS)[number]
    ? true
    : never
  : never = true;
void SAME_POINTS;

/** A task's lifecycle commands; anything malformed in task.json is dropped with a warning. */
export function taskLifecycleCommands(task: Task, warn: (text: string) => void): LifecycleCommands {
  const raw: unknown = (task as { lifecycle?: unknown }).lifecycle;
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    warn(`task ${task.id}: task.json "lifecycle" is not a mapping; its template hooks are ignored`);
    return {};
  }
  const result: LifecycleCommands = {};
  for (const point of LIFECYCLE_POINTS) {
    const list = (raw as Record<string, unknown>)[point];
    if (list === undefined) continue;
    if (Array.isArray(list) && list.every((c) => typeof c === 'string' && c.trim() !== '')) result[point] = list as string[];
    else warn(`task ${task.id}: task.json "lifecycle.${point}" is not a list of commands; it is ignored`);
  }
  return result;
}

export interface TaskBusOptions {
  task: Task;
  config: Config;
  groups: ProcessGroups;
  reporter?: LifecycleNotes;
  builtins?: LifecycleBuiltins;
  verbose?: boolean;
  env?: NodeJS.ProcessEnv;
}

export function lifecycleBusForTask(options: TaskBusOptions): LifecycleRunner {
  const warn = (text: string) => options.reporter?.note(text);
  return createLifecycleBus({
    template: taskLifecycleCommands(options.task, warn),
    config: options.config.lifecycle,
    groups: options.groups,
    ...(options.builtins ? { builtins: options.builtins } : {}),
    ...(options.reporter ? { reporter: options.reporter } : {}),
    ...(options.verbose !== undefined ? { verbose: options.verbose } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
}

/** The fields every event of this task carries. */
export function baseEvent(task: Task, taskDir: string, stepName: string | null, conversationId: string | null = null): LifecycleBase {
  return { task_id: task.id, step_name: stepName, conversation_id: conversationId, workspace: task.worktree, task_dir: taskDir };
}

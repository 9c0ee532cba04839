// Validates task.json at the edge, like hook.json: the steps a task runs (a snapshot of its
// template), where it runs, and the validation commands fixed when it started. Whatever comes
// off disk is checked once here, naming the first bad field, and trusted inside.
import { isHookState } from './hook-state.js';
import { EXECUTION_MODES, MAX_CHILD_INDEX } from './receipt.js';
import type { Task } from './task.js';
import { TASK_ID_PATTERN } from './task.js';
import type { StepDefinition, StepType } from './template.js';
import { GIT_ACTIONS, STEP_TYPES } from './template.js';
import { isTimestamp } from './time.js';

export class TaskFormatError extends Error {
  override name = 'TaskFormatError';
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : typeof v === 'object' ? 'an object' : String(v);
}

function fail(field: string, problem: string): never {
  throw new TaskFormatError(field, problem);
}

function str(o: Obj, key: string, field: string): string {
  const v = o[key];
  if (typeof v !== 'string') fail(`${field}${key}`, `expected text, got ${describe(v)}`);
  return v;
}

function optStr(o: Obj, key: string, field: string): void {
  if (o[key] !== undefined && typeof o[key] !== 'string') fail(`${field}${key}`, `expected text, got ${describe(o[key])}`);
}

function strList(o: Obj, key: string, field: string, required: boolean): void {
  const v = o[key];
  if (v === undefined && !required) return;
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))
    fail(`${field}${key}`, `expected a list of commands (text), got ${describe(v)}`);
}

function checkStep(v: unknown, i: number): StepDefinition {
  const field = `steps[${i}].`;
  if (!isObj(v)) fail(`steps[${i}]`, `expected a step (an object with name and type), got ${describe(v)}`);
  const name = str(v, 'name', field);
  if (name.length === 0) fail(`${field}name`, 'is empty');
  const type = v['type'];
  if (typeof type !== 'string' || !(STEP_TYPES as readonly string[]).includes(type)) {
    fail(`${field}type`, `unknown step type ${describe(type)} (this atlas runs ${STEP_TYPES.join(', ')})`);
  }
  const attempts = v['max_attempts'];
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1)
    fail(`${field}max_attempts`, `expected a whole number >= 1, got ${describe(attempts)}`);
  if (v['on_failure'] !== 'fail' && v['on_failure'] !== 'ask')
    fail(`${field}on_failure`, `expected fail or ask, got ${describe(v['on_failure'])}`);
  const timeout = v['timeout_ms'];
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0))
    fail(`${field}timeout_ms`, `expected milliseconds > 0, got ${describe(timeout)}`);
  if (v['idempotent'] !== undefined && typeof v['idempotent'] !== 'boolean')
    fail(`${field}idempotent`, `expected true or false, got ${describe(v['idempotent'])}`);
  optStr(v, 'description', field);
  switch (type as StepType) {
    case 'ai':
    case 'human':
      str(v, 'prompt', field);
      break;
    case 'command':
      strList(v, 'run', field, true);
      break;
    case 'validation':
      strList(v, 'commands', field, true);
      break;
    case 'git':
      if (!(GIT_ACTIONS as readonly unknown[]).includes(v['action']))
        fail(`${field}action`, `unknown git action ${describe(v['action'])} (allowed: ${GIT_ACTIONS.join(', ')})`);
      optStr(v, 'message', field);
      break;
  }
  return v as unknown as StepDefinition;
}

/** Checks parsed JSON against the task.json format; throws TaskFormatError naming the first bad field. */
export function parseTask(data: unknown): Task {
  if (!isObj(data)) fail('task', `expected an object, got ${describe(data)}`);
  const id = str(data, 'id', '');
  if (!TASK_ID_PATTERN.test(id)) fail('id', `expected a task id like task-20260117-143022, got ${describe(id)}`);
  for (const key of ['schema_version', 'workspace_id', 'template', 'description', 'repo_root', 'worktree', 'branch']) str(data, key, '');
  for (const key of ['created_at', 'updated_at']) {
    if (!isTimestamp(data[key])) fail(key, `expected an RFC 3339 time, got ${describe(data[key])}`);
  }
  if (!isHookState(data['status'])) fail('status', `unknown state ${describe(data['status'])}`);
  if (typeof data['in_place'] !== 'boolean') fail('in_place', `expected true or false, got ${describe(data['in_place'])}`);
  optStr(data, 'base_branch', '');
  optStr(data, 'base_commit', '');
  const steps = data['steps'];
  if (!Array.isArray(steps)) fail('steps', `expected a list of steps, got ${describe(steps)}`);
  for (const [i, s] of steps.entries()) checkStep(s, i);
  const index = data['task_index'];
  if (index !== undefined && (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_CHILD_INDEX)) {
    fail('task_index', `expected a whole number from 0 to ${MAX_CHILD_INDEX}, got ${describe(index)}`);
  }
  strList(data, 'validation_commands', '', false);
  const mode = data['execution_mode'];
  if (mode !== undefined && !(EXECUTION_MODES as readonly unknown[]).includes(mode))
    fail('execution_mode', `expected local or sandbox, got ${describe(mode)}`);
  return data as unknown as Task;
}

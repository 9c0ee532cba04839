// Tasks and workspaces on disk (DESIGN §3): creation, listing, lookup by id.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { HookState } from '../domain/hook-state.js';
import { isHookState } from '../domain/hook-state.js';
import type { Task, Workspace } from '../domain/task.js';
import { TASK_ID_PATTERN, taskIdFor } from '../domain/task.js';
import { parseTask, TaskFormatError } from '../domain/task-schema.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from './atomic-write.js';
import { readJsonFile, toJson } from './json-file.js';
import { withLock } from './lock.js';
import { atlasHome, taskDir, taskFiles, workspaceDir } from './paths.js';

export interface TaskRef {
  workspace: string;
  id: string;
  dir: string;
}

/** task.json, validated (exit 2 naming the file and the field when it is not a task). */
export function readTask(dir: string): Task {
  const path = taskFiles(dir).task;
  try {
    return parseTask(readJsonFile(path));
  } catch (error) {
    if (!(error instanceof TaskFormatError)) throw error;
    throw new AtlasError(`${path} is not a valid task file: ${error.message}`, {
      exitCode: EXIT.input,
      hint: 'fix the named field (docs/hook-format.md describes task.json), or restore the file from a backup; nothing was changed',
      cause: error,
    });
  }
}

/** task.json, or undefined when it is missing or invalid (for scans that report such tasks). */
export function tryReadTask(dir: string): Task | undefined {
  try {
    return readTask(dir);
  } catch {
    return undefined;
  }
}

/**
 * Only task.json's `status` (the hook's state, mirrored), for listings that skip ended tasks
 * without reading their hooks. Undefined when the file is missing or has no valid status.
 */
export function readTaskStatus(dir: string): HookState | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, 'task.json'), 'utf8');
  } catch {
    return undefined;
  }
  // toJson writes top-level keys at two spaces: the line is found without parsing the whole file.
  const line = TOP_LEVEL_STATUS.exec(text)?.[1];
  if (line !== undefined) return isHookState(line) ? line : undefined;
  try {
    const status = (JSON.parse(text) as { status?: unknown } | null)?.status;
    return isHookState(status) ? status : undefined;
  } catch {
    return undefined;
  }
}

const TOP_LEVEL_STATUS = /\n {2}"status": "([a-z_]+)"/;

export function writeTask(dir: string, task: Task): void {
  writeFileAtomic(taskFiles(dir).task, toJson(task));
}

/** Read-modify-write of task.json under its lock. */
export async function updateTask(dir: string, mutate: (task: Task) => Task): Promise<Task> {
  return withLock(taskFiles(dir).task, () => {
    const next = mutate(readTask(dir));
    writeTask(dir, next);
    return next;
  });
}

/**
 * Claims a fresh task directory. mkdir without `recursive` fails if the directory exists, so two
 * atlas processes starting in the same second get different ids (suffix -2, -3, ...).
 */
export function claimTaskDir(workspace: string, now: Date, home: string = atlasHome()): TaskRef {
  mkdirSync(join(workspaceDir(workspace, home), 'tasks'), { recursive: true, mode: PRIVATE_DIR_MODE });
  for (let attempt = 1; attempt < 1000; attempt++) {
    const id = taskIdFor(now, attempt);
    const dir = taskDir(workspace, id, home);
    if (existsSync(dir) || taskExistsAnywhere(id, home)) continue;
    try {
      mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    mkdirSync(taskFiles(dir).artifacts, { mode: PRIVATE_DIR_MODE });
    return { workspace, id, dir };
  }
  throw new AtlasError('could not allocate a task id', { exitCode: EXIT.failure });
}

function taskExistsAnywhere(id: string, home: string): boolean {
  return listTaskRefs(home).some((ref) => ref.id === id);
}

/** Every task directory under ATLAS_HOME, oldest id first. */
export function listTaskRefs(home: string = atlasHome()): TaskRef[] {
  const root = join(home, 'workspaces');
  return sortTaskRefs(listDirs(root).flatMap((workspace) => workspaceTaskRefs(root, workspace)));
}

/** The task folders of one workspace (`root` is $ATLAS_HOME/workspaces), unsorted. */
export function workspaceTaskRefs(root: string, workspace: string, ids: string[] = listDirs(join(root, workspace, 'tasks'))): TaskRef[] {
  // Names from readdir hold no separator, so plain concatenation is exact (and, over thousands
  // of tasks, much cheaper than path.join's normalisation).
  const tasks = `${root}${sep}${workspace}${sep}tasks${sep}`;
  return ids.filter((id) => TASK_ID_PATTERN.test(id)).map((id) => ({ workspace, id, dir: `${tasks}${id}` }));
}

/** Oldest id first; keys computed once, so thousands of tasks sort without a regex per comparison. */
export function sortTaskRefs(refs: TaskRef[]): TaskRef[] {
  const keyed = refs.map((ref) => ({ ref, key: splitId(ref.id) }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  return keyed.map((k) => k.ref);
}

export function listDirs(path: string): string[] {
  try {
    return readdirSync(path, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

/** Chronological order of task ids, with collision suffixes after their base id. */
export function compareTaskIds(a: string, b: string): number {
  return compareKeys(splitId(a), splitId(b));
}

function compareKeys([as, an]: [string, number], [bs, bn]: [string, number]): number {
  return as === bs ? an - bn : as < bs ? -1 : 1;
}

function splitId(id: string): [string, number] {
  const m = /^(task-\d{8}-\d{6})(?:-(\d+))?$/.exec(id);
  return m ? [m[1]!, m[2] ? Number(m[2]) : 1] : [id, 0];
}

export function findTaskRef(id: string, home: string = atlasHome()): TaskRef {
  const ref = listTaskRefs(home).find((r) => r.id === id);
  if (!ref) {
    throw new AtlasError(`no task ${id} under ${home}`, {
      exitCode: EXIT.notFound,
      hint: 'run `atlas status` to list tasks (and check ATLAS_HOME)',
    });
  }
  return ref;
}

export function workspaceFile(workspace: string, home: string = atlasHome()): string {
  return join(workspaceDir(workspace, home), 'workspace.json');
}

export function readWorkspace(workspace: string, home: string = atlasHome()): Workspace | undefined {
  const path = workspaceFile(workspace, home);
  return existsSync(path) ? (readJsonFile(path) as Workspace) : undefined;
}

export async function saveWorkspace(ws: Workspace, home: string = atlasHome()): Promise<void> {
  mkdirSync(workspaceDir(ws.name, home), { recursive: true, mode: PRIVATE_DIR_MODE });
  const path = workspaceFile(ws.name, home);
  await withLock(path, () => writeFileAtomic(path, toJson(ws)));
}

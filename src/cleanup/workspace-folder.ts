// Workspace folders: whether one may go once its tasks are gone, removing it, and the empty ones a
// killed `atlas start` leaves (it creates the folder, then claims a task in it). Only ever with
// rmdir: a folder in which anything appeared meanwhile stays.
import { existsSync, lstatSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { workspaceDir } from '../store/paths.js';
import { workspaceFile } from '../store/task-store.js';

const WORKSPACE_FILES = new Set(['workspace.json', 'tasks']);

/**
 * Only workspace.json, files in `goingFiles` (temp files being swept) and a tasks folder holding
 * nothing but `going` (the tasks being removed): nothing else of the user's or of atlas's would be
 * lost with the folder.
 */
export function workspaceRemovable(
  workspace: string,
  home: string,
  going: ReadonlySet<string> = new Set(),
  goingFiles: ReadonlySet<string> = new Set(),
): boolean {
  const dir = workspaceDir(workspace, home);
  try {
    if (!readdirSync(dir).every((name) => WORKSPACE_FILES.has(name) || goingFiles.has(join(dir, name)))) return false;
    return !existsSync(join(dir, 'tasks')) || readdirSync(join(dir, 'tasks')).every((name) => going.has(name));
  } catch {
    return false;
  }
}

export function removeWorkspace(workspace: string, home: string): boolean {
  const dir = workspaceDir(workspace, home);
  if (!workspaceRemovable(workspace, home)) return false;
  try {
    // rmdir fails on a non-empty folder: a task claimed meanwhile by `atlas start` survives.
    if (existsSync(join(dir, 'tasks'))) rmdirSync(join(dir, 'tasks'));
    rmSync(workspaceFile(workspace, home), { force: true });
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/**
 * A workspace folder an `atlas start` created and left without any task: no workspace.json,
 * nothing in it but an empty tasks/ (and `goingFiles`), unchanged for longer than `graceMs`.
 */
export function isAbandonedEmptyWorkspace(
  workspace: string,
  home: string,
  now: number,
  graceMs: number,
  goingFiles: ReadonlySet<string>,
): boolean {
  const dir = workspaceDir(workspace, home);
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory() || now - st.mtimeMs <= graceMs) return false;
    for (const name of readdirSync(dir)) {
      if (goingFiles.has(join(dir, name))) continue;
      if (name !== 'tasks') return false;
      const tasks = lstatSync(join(dir, name));
      if (!tasks.isDirectory() || now - tasks.mtimeMs <= graceMs || readdirSync(join(dir, name)).length > 0) return false;
    }
    return true;
  } catch {
    return false;
  }
}

export function removeEmptyWorkspace(workspace: string, home: string): boolean {
  const dir = workspaceDir(workspace, home);
  try {
    if (existsSync(join(dir, 'tasks'))) rmdirSync(join(dir, 'tasks'));
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** The names of the folders under $ATLAS_HOME/workspaces. */
export function listWorkspaceNames(home: string): string[] {
  try {
    return readdirSync(join(home, 'workspaces'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}

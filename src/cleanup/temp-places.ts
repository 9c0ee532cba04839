// Where atlas writes files atomically, and for which targets: the folders cleanup searches for the
// temp files of interrupted writes. A temp file counts only in its own place and for a file atlas
// writes there, so a user's look-alike elsewhere is never touched.
import { HOOK_FILE_NAME, HOOK_MARKDOWN_FILE_NAME } from '../domain/hook.js';
import { homePaths, taskFiles, workspaceDir } from '../store/paths.js';

export interface TempPlace {
  dir: string;
  /** Whether atlas writes `target` atomically in this folder. */
  accepts: (target: string) => boolean;
  /** Also search sub-folders (a task's artifacts/<step>/). */
  recurse: boolean;
}

const TASK_TARGETS = new Set(['task.json', HOOK_FILE_NAME, HOOK_MARKDOWN_FILE_NAME, 'owner.json']);
const KEY_TARGETS = new Set(['task-index.json', 'master.key', 'account.xpub']);
const CACHE_TARGET = /^config-[0-9a-f]{8}\.json$/;

export function taskTempPlaces(dir: string): TempPlace[] {
  return [
    { dir, accepts: (t) => TASK_TARGETS.has(t), recurse: false },
    // Step outputs and validation logs: every file there is atlas's.
    { dir: taskFiles(dir).artifacts, accepts: () => true, recurse: true },
  ];
}

export function workspaceTempPlace(workspace: string, home: string): TempPlace {
  return { dir: workspaceDir(workspace, home), accepts: (t) => t === 'workspace.json', recurse: false };
}

export function homeTempPlaces(home: string): TempPlace[] {
  const paths = homePaths(home);
  return [
    { dir: paths.keysDir, accepts: (t) => KEY_TARGETS.has(t), recurse: false },
    { dir: paths.cacheDir, accepts: (t) => CACHE_TARGET.test(t), recurse: false },
  ];
}

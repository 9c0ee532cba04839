// OnColdStart at its call site: once per process, before the first agent step it runs (a new
// task's worktree, or a task resumed or recovered here). If a hook fails, the agent does not start
// and what the failed run added to the working tree (files and folders git did not see before)
// is moved out of it, into the task's artifacts, so the next attempt starts from the tree as it was
// and nothing is deleted.
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AtlasError } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import type { Task } from '../domain/task.js';
import { runGit } from '../git/run-git.js';
import { baseEvent } from './for-task.js';
import type { LifecycleBus } from './types.js';

async function untracked(worktree: string): Promise<Set<string> | undefined> {
  if (!existsSync(worktree)) return undefined;
  const result = await runGit(worktree, ['status', '--porcelain=v1', '-z', '--untracked-files=normal'], { allowFailure: true });
  if (result.code !== 0) return undefined;
  const paths = new Set<string>();
  for (const record of result.stdout.split('\0')) if (record.startsWith('?? ')) paths.add(record.slice(3));
  return paths;
}

/** From the hook before this attempt started: new_workspace if no agent step ever started, else resumed. */
export function coldStartReason(hook: Hook, task: Task): 'new_workspace' | 'resumed' {
  const earlierAgentStart = hook.history.some((e) => {
    const i = e.details?.['step_index'];
    return e.trigger === 'step_start' && typeof i === 'number' && task.steps[i]?.type === 'ai';
  });
  return earlierAgentStart ? 'resumed' : 'new_workspace';
}

export interface ColdStartFailure {
  error: AtlasError;
  /** Where the files the failed run added were moved (relative paths inside it), if any. */
  movedTo?: string;
  moved: string[];
}

export async function runColdStart(
  bus: LifecycleBus,
  input: { task: Task; taskDir: string; stepName: string; attempt: number; reason: 'new_workspace' | 'resumed' },
): Promise<ColdStartFailure | undefined> {
  const { task } = input;
  const before = await untracked(task.worktree);
  try {
    await bus.coldStart({ ...baseEvent(task, input.taskDir, input.stepName), point: 'on_cold_start', reason: input.reason });
    return undefined;
  } catch (error) {
    const atlasError = error instanceof AtlasError ? error : new AtlasError(`OnColdStart failed: ${(error as Error).message}`);
    const after = before ? await untracked(task.worktree) : undefined;
    const added = after ? [...after].filter((p) => !before!.has(p)) : [];
    if (added.length === 0) return { error: atlasError, moved: [] };
    const movedTo = join(input.taskDir, 'artifacts', input.stepName, `cold-start-${input.attempt}`);
    const moved: string[] = [];
    for (const rel of added) {
      const target = join(movedTo, rel);
      try {
        mkdirSync(dirname(target), { recursive: true });
        renameSync(join(task.worktree, rel), target);
        moved.push(rel.replace(/\/$/, ''));
      } catch {
        // Left in place (another filesystem, or gone meanwhile): named by git status anyway.
      }
    }
    return { error: atlasError, moved, ...(moved.length > 0 ? { movedTo } : {}) };
  }
}

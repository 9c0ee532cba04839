// Files a running step changed by any means (the agent's tools, a shell it ran, a formatter): git
// status of the working tree, polled while the step runs, so files_touched is current when a
// crash comes, not only at the step's end. Paths already changed before the step are not its own.
import { readGitState } from '../git/state.js';

export async function changedPaths(worktree: string): Promise<Set<string> | undefined> {
  try {
    return new Set((await readGitState(worktree)).changed);
  } catch {
    return undefined;
  }
}

export interface FilesWatch {
  /** One last look, then no more polls; resolves with every path the step changed. */
  stop(): Promise<string[]>;
}

export function watchChangedFiles(
  worktree: string,
  before: Set<string> | undefined,
  intervalMs: number,
  onNew: (paths: string[]) => void,
): FilesWatch {
  const seen = new Set<string>();
  let polling: Promise<void> = Promise.resolve();
  let stopped = false;
  const poll = () => {
    polling = polling.then(async () => {
      const now = await changedPaths(worktree);
      if (!now) return;
      const fresh = [...now].filter((p) => !before?.has(p) && !seen.has(p));
      for (const p of fresh) seen.add(p);
      if (fresh.length > 0) onNew(fresh);
    });
    return polling;
  };
  const timer = setInterval(() => {
    if (!stopped) void poll();
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await poll();
      return [...seen];
    },
  };
}

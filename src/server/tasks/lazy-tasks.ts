// The task engine behind the API (tasks.ts and what it loads: the task list, recovery's detection,
// cleanup's rules, the hook schema), loaded on first use instead of before the server listens: a
// server's start-up, and one that only runs conversations, loads none of it. What the server does
// with its tasks before then (count them, wait for them, stop them) concerns no task.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerContext } from '../http/context.js';
import type { Tasks } from './tasks.js';

/** Whether this home has the workspaces of tasks started over HTTP (`srv-…`). */
export function serverTasksRanHere(home: string): boolean {
  try {
    return readdirSync(join(home, 'workspaces')).some((n) => n.startsWith('srv-'));
  } catch {
    return false;
  }
}

export class LazyTasks {
  private tasks: Tasks | undefined;
  private loading: Promise<Tasks> | undefined;

  constructor(private readonly ctx: ServerContext) {}

  /** The engine (loaded once; every caller waits for the same loading). */
  load(): Promise<Tasks> {
    this.loading ??= import('./tasks.js').then((m) => (this.tasks = new m.Tasks(this.ctx)));
    return this.loading;
  }

  get runningCount(): number {
    return this.tasks?.runningCount ?? 0;
  }

  async settled(): Promise<void> {
    await this.tasks?.settled();
  }

  async stopAll(): Promise<void> {
    await this.tasks?.stopAll();
  }
}

// The watcher behind `atlas ui`'s live board for tasks other processes run: bounded (fs.watch
// handles capped, crashed tasks not taken for running ones), a task that appears is adopted and its
// history logged, and a busy task whose process is gone gets `finished` with why.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: the bench's plain .mjs helpers, without types
import { makeRepo, writeFixtureTask } from '../bench/lib.mjs';
import { serverDir } from '../src/server/accounts/tokens.js';
import { LocalTaskWatcher } from '../src/server/board/local-watch.js';
import type { ServerContext } from '../src/server/http/context.js';
import { adoptLocalTasks } from '../src/server/local-board.js';
import { EventLogs } from '../src/server/state/event-log.js';
import { openState } from '../src/server/state/open.js';
import type { ServerState } from '../src/server/state/types.js';
import { logKey } from '../src/server/state/types.js';
import { Tasks } from '../src/server/tasks/tasks.js';
import { tempDir } from './helpers/core-fixtures.js';

const write = writeFixtureTask as (home: string, repo: string, o: { id: string; workspace: string }) => { id: string; dir: string };

const states: ServerState[] = [];
afterEach(async () => {
  for (const s of states.splice(0)) await s.close();
});

/** A server context on the home's own state (SQLite), as `atlas ui` has. */
async function contextOf(
  home: string,
  log: (e: Record<string, unknown>) => void = () => undefined,
): Promise<{ ctx: ServerContext; events: (taskId: string) => Promise<{ type: string; data: Record<string, unknown> }[]> }> {
  const state = await openState({ home, url: '' });
  states.push(state);
  const ctx = {
    home,
    state: async () => state,
    logs: new EventLogs(
      async () => state,
      (e) => log({ error: e.message }),
    ),
    log,
  } as unknown as ServerContext;
  return { ctx, events: (taskId) => state.eventsAfter(logKey.task(taskId), 0) };
}

async function until(what: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the local task watcher', () => {
  it('caps its fs.watch handles over 300 tasks, adopts a task that appears and logs its history, and ends a crashed one', async () => {
    const home = tempDir();
    const repo = (makeRepo as () => string)();
    // 300 tasks left "step_running" by processes that are gone: crashed, not running elsewhere.
    for (let i = 0; i < 300; i++) write(home, repo, { id: `task-20260101-120000-${i + 1}`, workspace: `ws${i % 10}` });
    expect(adoptLocalTasks(home)).toBe(300);
    const logged: Record<string, unknown>[] = [];
    const { ctx, events } = await contextOf(home, (e) => logged.push(e));
    const tasks = new Tasks(ctx);
    const watcher = new LocalTaskWatcher(ctx, tasks, 'local', { maxWatches: 40, scanMs: 300, debounceMs: 20 });
    watcher.start();
    try {
      expect(watcher.watches).toBeLessThanOrEqual(40);
      expect(tasks.elsewhere.size).toBe(0);
      // Nothing is logged for the tasks found at start: they are the starting point.
      expect(await events('task-20260101-120000-1')).toEqual([]);

      // A task appears in a new workspace (its process, here, is already gone).
      const fresh = write(home, repo, { id: 'task-20260102-120000', workspace: 'fresh' });
      await until(async () => (await events(fresh.id)).some((e) => e.type === 'finished'));
      const record = JSON.parse(readFileSync(join(serverDir(home), 'tasks', 'task-20260102-120000.json'), 'utf8'));
      expect(record.account).toBe('local');
      expect(await (await ctx.state()).getTask(fresh.id)).toMatchObject({ account: 'local' });
      const log = await events(fresh.id);
      expect(log.filter((e) => e.type === 'state').map((e) => e.data['to'])).toEqual([
        'initializing',
        ...Array.from({ length: 9 }, (_, i) => (i % 2 === 0 ? 'step_running' : 'step_pending')),
      ]);
      expect(log.at(-1)).toMatchObject({
        type: 'finished',
        data: { command: 'terminal', state: 'step_running', message: 'its process is gone: crashed' },
      });
      expect(tasks.elsewhere.size).toBe(0);
      expect(watcher.watches).toBeLessThanOrEqual(40);
      expect(logged).toEqual([]);
    } finally {
      watcher.stop();
    }
  }, 60_000);

  it('in a home with no task yet, notices the first one through fs.watch alone (no timed scan)', async () => {
    const home = tempDir();
    const repo = (makeRepo as () => string)();
    const { ctx, events } = await contextOf(home);
    const tasks = new Tasks(ctx);
    const watcher = new LocalTaskWatcher(ctx, tasks, 'local', { scanMs: 600_000, debounceMs: 20 });
    watcher.start();
    try {
      const first = write(home, repo, { id: 'task-20260103-120000', workspace: 'first' });
      await until(async () => (await events(first.id)).some((e) => e.type === 'state'), 5_000);
      // Once workspaces/ and its tasks/ exist, they are watched instead of their parents.
      await until(() => watcher.watches === 3, 5_000).catch((e) => {
        throw new Error(`watches ${watcher.watches}: ${e}`);
      });
    } finally {
      watcher.stop();
    }
  }, 30_000);
});

// The watcher behind `atlas ui`'s live board for tasks other processes run: bounded (fs.watch
// handles capped, crashed tasks not taken for running ones), a task that appears is adopted and its
// history logged, and a busy task whose process is gone gets `finished` with why.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServerContext } from '../src/server/context.js';
import { EventLogs } from '../src/server/event-log.js';
import { adoptLocalTasks } from '../src/server/local-board.js';
import { LocalTaskWatcher } from '../src/server/local-watch.js';
import { Tasks } from '../src/server/tasks.js';
import { serverDir } from '../src/server/tokens.js';
import { tempDir } from './helpers/core-fixtures.js';
// @ts-expect-error: the bench's plain .mjs helpers, without types
import { makeRepo, writeFixtureTask } from '../bench/lib.mjs';

const write = writeFixtureTask as (home: string, repo: string, o: { id: string; workspace: string }) => { id: string; dir: string };

function events(dir: string): { type: string; data: Record<string, unknown> }[] {
  const path = join(dir, 'events.jsonl');
  return existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
}

async function until(what: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
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
    const ctx = { home, logs: new EventLogs(), log: (e: Record<string, unknown>) => logged.push(e) } as unknown as ServerContext;
    const tasks = new Tasks(ctx);
    const watcher = new LocalTaskWatcher(ctx, tasks, 'local', { maxWatches: 40, scanMs: 300, debounceMs: 20 });
    watcher.start();
    try {
      expect(watcher.watches).toBeLessThanOrEqual(40);
      expect(tasks.elsewhere.size).toBe(0);
      // Nothing is logged for the tasks found at start: they are the starting point.
      expect(events(join(home, 'workspaces', 'ws0', 'tasks', 'task-20260101-120000-1'))).toEqual([]);

      // A task appears in a new workspace (its process, here, is already gone).
      const fresh = write(home, repo, { id: 'task-20260102-120000', workspace: 'fresh' });
      await until(() => events(fresh.dir).some((e) => e.type === 'finished'));
      const record = JSON.parse(readFileSync(join(serverDir(home), 'tasks', 'task-20260102-120000.json'), 'utf8'));
      expect(record.account).toBe('local');
      const log = events(fresh.dir);
      expect(log.filter((e) => e.type === 'state').map((e) => e.data['to'])).toEqual(['initializing', ...Array.from({ length: 9 }, (_, i) => (i % 2 === 0 ? 'step_running' : 'step_pending'))]);
      expect(log.at(-1)).toMatchObject({ type: 'finished', data: { command: 'terminal', state: 'step_running', message: 'its process is gone: crashed' } });
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
    const ctx = { home, logs: new EventLogs(), log: () => undefined } as unknown as ServerContext;
    const tasks = new Tasks(ctx);
    const watcher = new LocalTaskWatcher(ctx, tasks, 'local', { scanMs: 600_000, debounceMs: 20 });
    watcher.start();
    try {
      const first = write(home, repo, { id: 'task-20260103-120000', workspace: 'first' });
      await until(() => events(first.dir).some((e) => e.type === 'state'), 5_000);
      // Once workspaces/ and its tasks/ exist, they are watched instead of their parents.
      await until(() => watcher.watches === 3, 5_000);
    } finally {
      watcher.stop();
    }
  }, 30_000);
});

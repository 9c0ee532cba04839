// The server's event log (issues 19 and 23): ids unique and increasing per log, from the server
// state, whichever process appends; a follower gets every event once and in order, also one another
// process appended; a failed append never crashes the server; and the events.jsonl files an older
// atlas wrote are adopted once with their ids (a torn last line skipped, a removed log's last id kept).
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptFilesOnce } from '../src/server/cluster/state-import.js';
import { EventLog } from '../src/server/state/event-log.js';
import { openState } from '../src/server/state/open.js';
import { logKey } from '../src/server/state/types.js';
import { tempDir } from './helpers/core-fixtures.js';
import { waitUntil } from './helpers/server-fixtures.js';

describe('event ids and followers', () => {
  it('a follower waiting on an id another connection appended gets it, in order, once', async () => {
    const home = tempDir();
    const state = await openState({ home, url: '' });
    const other = await openState({ home, url: '' });
    try {
      const errors: Error[] = [];
      const log = new EventLog(
        'conversation:alice/c',
        async () => state,
        (e) => errors.push(e),
      );
      const seen: number[] = [];
      const stop = log.follow(0, (e) => seen.push(e.id));
      await log.append('a', {});
      // Another server's append (this process does not see it happen): the follower waits for it.
      await other.appendEvent('conversation:alice/c', 'b', {});
      await log.append('c', {});
      await waitUntil(() => (seen.length === 3 ? true : undefined), 5_000, 'three events');
      stop();
      expect(seen).toEqual([1, 2, 3]);
      expect(errors).toEqual([]);
    } finally {
      await other.close();
      await state.close();
    }
  });

  it('one poller per log serves all its followers of a turn on another server: each gets every event once, in order', async () => {
    const home = tempDir();
    const state = await openState({ home, url: '' });
    const other = await openState({ home, url: '' });
    try {
      let reads = 0;
      const counted = new Proxy(state, {
        get: (target, name, receiver) =>
          name === 'eventsAfter'
            ? (...args: Parameters<typeof state.eventsAfter>) => (reads++, target.eventsAfter(...args))
            : Reflect.get(target, name, receiver),
      });
      const log = new EventLog(
        'conversation:alice/r',
        async () => counted,
        () => undefined,
      );
      // A local-only follower (the metrics' observer) never gets another server's events.
      const local: number[] = [];
      log.follow(0, (e) => local.push(e.id), { localOnly: true });
      await other.appendEvent('conversation:alice/r', 'turn_started', {});
      const seen: number[][] = Array.from({ length: 20 }, () => []);
      const stops = seen.map((ids) => log.follow(0, (e) => ids.push(e.id), { remote: true }));
      await waitUntil(() => (seen.every((ids) => ids.length === 1) ? true : undefined), 5_000, 'the replays');
      const before = reads;
      const started = Date.now();
      for (let i = 0; i < 10; i++) {
        await other.appendEvent('conversation:alice/r', 'output', { i });
        await new Promise((r) => setTimeout(r, 50));
      }
      await waitUntil(() => (seen.every((ids) => ids.length === 11) ? true : undefined), 5_000, 'every follower to get all 11');
      for (const ids of seen) expect(ids).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
      // One read per 200 ms for the log, not one per follower (20 followers would make ~100 over 1 s).
      const polls = reads - before;
      expect(polls).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 200) + 2);
      expect(local).toEqual([]);
      for (const stop of stops) stop();
      const after = reads;
      await new Promise((r) => setTimeout(r, 500));
      expect(reads).toBe(after);
    } finally {
      await other.close();
      await state.close();
    }
  });

  it('an append the state refuses is reported, never thrown; the next one works', async () => {
    const home = tempDir();
    const state = await openState({ home, url: '' });
    const errors: Error[] = [];
    let broken = true;
    const log = new EventLog(
      'task:t1',
      async () => {
        if (broken) throw new Error('database down');
        return state;
      },
      (e) => errors.push(e),
    );
    expect(await log.append('lost', {})).toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual(['database down']);
    broken = false;
    expect((await log.append('kept', {}))?.id).toBe(1);
    await state.close();
  });
});

describe('logs an older atlas kept in files', () => {
  it("are adopted once with their ids: a torn last line skipped, a removed conversation's last id kept", async () => {
    const home = tempDir();
    const conversations = join(home, 'server', 'accounts', 'alice', 'conversations');
    mkdirSync(join(conversations, 'c1'), { recursive: true });
    const line = (id: number) => `${JSON.stringify({ id, type: 'message', at: '2026-01-01T00:00:00.000Z', data: { id } })}\n`;
    writeFileSync(join(conversations, 'c1', 'events.jsonl'), line(1) + line(2));
    appendFileSync(join(conversations, 'c1', 'events.jsonl'), '{"id":3,"type":"mess');
    mkdirSync(join(conversations, '.retired-event-ids'), { recursive: true });
    writeFileSync(join(conversations, '.retired-event-ids', 'gone'), '7\n');
    const state = await openState({ home, url: '' });
    try {
      expect((await adoptFilesOnce(home, state))?.events).toBe(2);
      expect(await adoptFilesOnce(home, state)).toBeUndefined();
      expect((await state.eventsAfter(logKey.conversation('alice', 'c1'), 0)).map((e) => e.id)).toEqual([1, 2]);
      expect((await state.appendEvent(logKey.conversation('alice', 'c1'), 'next', {})).id).toBe(3);
      // A conversation removed before the upgrade, made again: its ids go on from 7.
      expect((await state.appendEvent(logKey.conversation('alice', 'gone'), 'start', {})).id).toBe(8);
    } finally {
      await state.close();
    }
  });
});

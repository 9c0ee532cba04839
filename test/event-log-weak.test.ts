// The server's event logs are held weakly (issue 37: no account can grow the server without
// bound): a log nobody uses is collected, one a stream follows or an append waits in is kept, and a
// log made again continues the ids in the state and is observed again. Real SQLite state, V8's own
// full collections.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventLog, StoredEvent } from '../src/server/state/event-log.js';
import { EventLogs } from '../src/server/state/event-log.js';
import { ObservedEventLogs } from '../src/server/state/observed-logs.js';
import { openState } from '../src/server/state/open.js';
import type { ServerState } from '../src/server/state/types.js';
import { tempDir } from './helpers/core-fixtures.js';
import { waitUntil } from './helpers/server-fixtures.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A full collection once the current job is over (a WeakRef's target lives until then). */
async function collect(): Promise<void> {
  await new Promise((done) => setImmediate(done));
  gc();
  await new Promise((done) => setImmediate(done));
}

/** Collects until `check` holds (finalizers run some time after the collection). */
async function collectUntil(check: () => boolean, what: string): Promise<void> {
  await waitUntil(
    async () => {
      await collect();
      return check() ? true : undefined;
    },
    10_000,
    what,
  );
}

/** Appends one event to each of `count` logs of `account` (in a frame of its own, gone once it returns: no local keeps a log). */
async function appendToEach(logs: EventLogs, account: string, count: number): Promise<WeakRef<EventLog>[]> {
  const refs: WeakRef<EventLog>[] = [];
  for (let i = 0; i < count; i++) {
    const log = logs.get(`conversation:${account}/c${i}`);
    await log.append('message', { i });
    refs.push(new WeakRef(log));
  }
  return refs;
}

/** A local-only follower of `key` that records ids in `seen`. */
function follow(logs: EventLogs, key: string, seen: number[]): { ref: WeakRef<EventLog>; stop: () => void } {
  const log = logs.get(key);
  return { ref: new WeakRef(log), stop: log.follow(0, (e) => seen.push(e.id), { localOnly: true }) };
}

let state: ServerState;
beforeAll(async () => {
  state = await openState({ home: tempDir(), url: '' });
});
afterAll(async () => {
  await state.close();
});

describe('event logs held weakly', () => {
  it('a log nobody uses is collected, and its entry goes', async () => {
    const errors: Error[] = [];
    const logs = new EventLogs(
      async () => state,
      (e) => errors.push(e),
    );
    const refs = await appendToEach(logs, 'alice', 50);
    expect(logs.size).toBe(50);
    await collectUntil(() => refs.every((r) => r.deref() === undefined) && logs.size === 0, 'every log collected');
    // Made again, a log continues the ids the state holds.
    const again = logs.get('conversation:alice/c7');
    expect(await again.readLastId()).toBe(1);
    expect((await again.append('message', { again: true }))?.id).toBe(2);
    expect((await again.since(0)).map((e) => e.data)).toEqual([{ i: 7 }, { again: true }]);
    await logs.settled();
    expect(errors).toEqual([]);
  });

  it('keeps a log a stream follows, and one whose appends still wait', async () => {
    const logs = new EventLogs(
      async () => state,
      () => undefined,
    );
    const seen: number[] = [];
    // A stream (its unsubscribe holds the log) and an append asked for and not yet stored.
    const stream = follow(logs, 'conversation:bob/followed', seen);
    const pending = logs.get('conversation:bob/pending').append('message', { late: true });
    await collect();
    expect(stream.ref.deref()).toBeDefined();
    // The same log, so an append made through another lookup reaches the stream.
    await logs.get('conversation:bob/followed').append('message', {});
    expect(seen).toEqual([1]);
    expect((await pending)?.id).toBe(1);
    stream.stop();
    stream.stop = () => undefined;
    await logs.settled();
    await collectUntil(() => stream.ref.deref() === undefined && logs.size === 0, 'both logs collected once unused');
  });

  it('a log made again before the collected one is counted out stays the one given out', async () => {
    const logs = new EventLogs(
      async () => state,
      () => undefined,
    );
    const [first] = await appendToEach(logs, 'erin', 1);
    await new Promise((done) => setImmediate(done));
    gc();
    // Collected, its finalizer not run yet: the next use makes a new log in its place.
    const second = logs.get('conversation:erin/c0');
    expect(first!.deref()).toBeUndefined();
    for (let i = 0; i < 5; i++) await collect();
    // The old log's finalizer did not take the new one's entry away.
    expect(logs.get('conversation:erin/c0')).toBe(second);
    expect(logs.size).toBe(1);
    expect((await second.append('message', {}))?.id).toBe(2);
  });

  it('settles the logs it still holds, whatever was collected', async () => {
    const logs = new EventLogs(
      async () => state,
      () => undefined,
    );
    await appendToEach(logs, 'carol', 1);
    await collectUntil(() => logs.size === 0, 'the log collected');
    const kept = logs.get('conversation:carol/kept');
    const stored = kept.append('message', {});
    await logs.settled();
    expect((await stored)?.id).toBe(1);
  });

  it('observes a log made again, as the first time (the metrics keep counting)', async () => {
    const observed: string[] = [];
    const logs = new ObservedEventLogs(
      async () => state,
      () => undefined,
      (kind, key, e: StoredEvent) => observed.push(`${kind} ${key} ${e.id}`),
    );
    await appendToEach(logs, 'dave', 1);
    await collectUntil(() => logs.size === 0, 'the observed log collected');
    await logs.get('conversation:dave/c0').append('usage', {});
    expect(observed).toEqual(['conversation conversation:dave/c0 1', 'conversation conversation:dave/c0 2']);
  });
});

// Issue 37: one chatty turn must not stall the others. Its events reach the state in batches
// (group commit, src/server/state/event-log.ts), one transaction per batch instead of one per
// event, and a follower is sent an event only once its batch has committed. Against the real
// SQLite state: appends asked for at once are stored in a few transactions, with ids in order and
// nothing sent before it is stored. Against a server in this process: a command agent printing
// 4,000 lines streams every event once, in order, while /health goes on answering; the event-loop
// delay (perf_hooks) is reported, its target is in bench/server-chatty.mjs.
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { AccountEvents } from '../src/server/state/account-events.js';
import { EventLog } from '../src/server/state/event-log.js';
import { ObservedEventLogs } from '../src/server/state/observed-logs.js';
import { openState } from '../src/server/state/open.js';
import type { ServerState } from '../src/server/state/types.js';
import { REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, readSse, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();

const serve = inProcessServers();
const CHATTY_AGENT = join(REPO_ROOT, 'test', 'fixtures', 'server', 'chatty-agent.sh');

/** The real state, counting the transactions that append events. */
function counting(state: ServerState): { state: ServerState; transactions: () => number } {
  let n = 0;
  const seen = Object.create(state) as ServerState;
  seen.appendEvent = (...a) => (n++, state.appendEvent(...a));
  seen.appendEvents = (...a) => (n++, state.appendEvents(...a));
  return { state: seen, transactions: () => n };
}

describe("group commit of a log's events", () => {
  it('stores 2,000 appends asked for at once in a few transactions, ids in order, each sent to a follower only once stored', async () => {
    const real = await openState({ home: tempDir(), url: '' });
    try {
      const { state, transactions } = counting(real);
      const errors: Error[] = [];
      const log = new EventLog(
        'conversation:a/c1',
        async () => state,
        (e) => errors.push(e),
      );
      const sent: number[] = [];
      const unstored: number[] = [];
      log.follow(
        0,
        (e) => {
          sent.push(e.id);
          // Stored before it is sent: the state's counter has reached it already.
          void real.lastEventId('conversation:a/c1').then((last) => last < e.id && unstored.push(e.id));
        },
        { localOnly: true },
      );
      const appended = await Promise.all(Array.from({ length: 2000 }, (_, i) => log.append('output', { text: `line ${i}` })));
      await log.settled();
      expect(errors).toEqual([]);
      expect(appended.map((e) => e?.id)).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
      expect(appended.map((e) => e?.data['text'])).toEqual(Array.from({ length: 2000 }, (_, i) => `line ${i}`));
      expect(sent).toEqual(appended.map((e) => e!.id));
      // One per event before (2,000); at most 256 events per transaction now.
      expect(transactions()).toBeLessThanOrEqual(Math.ceil(2000 / 256) + 1);
      await real.lastEventId('conversation:a/c1');
      expect(unstored).toEqual([]);
    } finally {
      await real.close();
    }
  });

  it('keeps appends of different fences apart: a refused fence stores none of its batch, the rest are stored', async () => {
    const state = await openState({ home: tempDir(), url: '' });
    try {
      const errors: Error[] = [];
      const log = new EventLog(
        'conversation:a/c2',
        async () => state,
        (e) => errors.push(e),
      );
      const claim = await state.claimLease('turn:a/c2', 'me', 60_000);
      if (!claim.ok) throw new Error('lease not claimed');
      const good = { lease: 'turn:a/c2', token: claim.token };
      const stale = { lease: 'turn:a/c2', token: claim.token - 1 };
      const results = await Promise.all([
        log.append('a', {}, good),
        log.append('b', {}, stale),
        log.append('c', {}, stale),
        log.append('d', {}, good),
        log.append('e', {}),
      ]);
      expect(results.map((e) => e?.type)).toEqual(['a', undefined, undefined, 'd', 'e']);
      expect(results.map((e) => e?.id)).toEqual([1, undefined, undefined, 2, 3]);
      expect(errors.map((e) => e.name)).toEqual(['LeaseLostError']);
    } finally {
      await state.close();
    }
  });
});

describe("a conversation's events copied into its account's log", () => {
  it('stores each copy in the transaction of its event: one commit for both logs, none for a refused fence', async () => {
    const real = await openState({ home: tempDir(), url: '' });
    try {
      const { state, transactions } = counting(real);
      const errors: Error[] = [];
      const account = new AccountEvents(
        async () => state,
        (e) => errors.push(e),
      );
      const logs = new ObservedEventLogs(
        async () => state,
        (e) => errors.push(e),
        () => undefined,
        (key) => account.mirrorOf(key),
      );
      const copied: number[] = [];
      account.logOf('a').follow(0, (e) => copied.push((e.data['source'] as { event_id: number }).event_id));
      const claim = await real.claimLease('conversation:a/c3', 'me', 60_000);
      if (!claim.ok) throw new Error('lease not claimed');
      const good = { lease: 'conversation:a/c3', token: claim.token };
      const log = logs.get('conversation:a/c3');
      const stored = await Promise.all(Array.from({ length: 10 }, (_, i) => log.append('output', { i }, good)));
      const refused = await log.append('output', { i: 10 }, { ...good, token: claim.token - 1 });
      expect(refused).toBeUndefined();
      expect(errors.map((e) => e.name)).toEqual(['LeaseLostError']);
      // The copies: not a transaction of their own.
      expect(transactions()).toBe(2);
      expect(stored.map((e) => e?.copy)).toEqual(Array.from({ length: 10 }, () => undefined));
      const rows = await real.eventsAfter('account:a', 0);
      expect(rows.map((e) => e.data)).toEqual(
        Array.from({ length: 10 }, (_, i) => ({ i, source: { kind: 'conversation', id: 'c3', event_id: i + 1 } })),
      );
      expect(copied).toEqual(rows.map((e) => (e.data['source'] as { event_id: number }).event_id));
      expect(account.mirrorOf('task:t1')).toBeUndefined();
    } finally {
      await real.close();
    }
  });

  it("copies tasks' events to their accounts, keeping the accounts of recent tasks only", async () => {
    const state = await openState({ home: tempDir(), url: '' });
    try {
      const account = new AccountEvents(
        async () => state,
        (e) => {
          throw e;
        },
      );
      const tasks = AccountEvents.TASKS_KEPT + 6;
      const row = (i: number) => ({
        task_id: `t${i}`,
        account: i % 2 ? 'odd' : 'even',
        workspace: '',
        dir: '',
        repo: '',
        template: 't',
        created_at: '',
        host: '',
      });
      for (let i = 0; i < tasks; i++) await state.putTask(row(i));
      const event = (i: number, id: number) => ({ id, type: 'step', data: { i }, at: '' });
      // An unknown task copies nothing and is asked again (not kept).
      account.copy('task', 'task:nobody', event(-1, 1));
      for (let i = 0; i < tasks; i++) account.copy('task', `task:t${i}`, event(i, 1));
      // A task copying again is looked up once: its account is kept (and kept longest).
      account.copy('task', `task:t${tasks - 1}`, event(tasks - 1, 2));
      await waitUntil(async () => ((await state.eventsAfter('account:odd', 0)).length === tasks / 2 + 1 ? true : undefined), 20_000);
      await account.settled();
      expect(account.taskAccountsKept).toBe(AccountEvents.TASKS_KEPT);
      // The first task's account was dropped: its next event is looked up again, and lands where it belongs.
      account.copy('task', 'task:t1', event(1, 2));
      await waitUntil(async () => ((await state.eventsAfter('account:odd', 0)).length === tasks / 2 + 2 ? true : undefined), 20_000);
      const odd = await state.eventsAfter('account:odd', 0);
      expect(odd.at(-1)!.data).toEqual({ i: 1, source: { kind: 'task', id: 't1', event_id: 2 } });
      expect((await state.eventsAfter('account:even', 0)).length).toBe(tasks / 2);
      expect(account.taskAccountsKept).toBe(AccountEvents.TASKS_KEPT);
    } finally {
      await state.close();
    }
  });
});

describe('a chatty turn', () => {
  it('streams 4,000 lines of output, every event once and in order, while /health goes on answering', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'chatty');
    const { url } = await serve(
      home,
      agentConfig((c) => (c.ai.command = `/bin/bash ${CHATTY_AGENT}`)),
    );
    process.env['CHATTY_MESSAGES'] = '4000';
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    let streaming = true;
    let answeredWhileStreaming = 0;
    const prober = (async () => {
      while (streaming) {
        const r = await fetch(`${url}/health`);
        await r.arrayBuffer();
        if (streaming && r.status === 200) answeredWhileStreaming++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      const res = await fetch(`${url}/conversations/talk/sandbox/s1`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'talk a lot' }),
      });
      expect(res.status).toBe(200);
      const events = await readSse(res);
      streaming = false;
      await prober;
      delay.disable();
      const ids = events.map((e) => Number(e.id));
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
      expect(events.filter((e) => e.event === 'output')).toHaveLength(4000);
      expect(events.filter((e) => e.event === 'output').map((e) => e.data.text.split(' ')[1])).toEqual(
        Array.from({ length: 4000 }, (_, i) => String(i + 1)),
      );
      expect(events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
      expect(answeredWhileStreaming).toBeGreaterThan(0);
      // The same events replayed after the first 1,000 (Last-Event-ID): the rest, once each.
      const replay = await fetch(`${url}/conversations/talk/events`, { headers: auth(token, { 'last-event-id': '1000' }) });
      const again = await readSse(replay, (e) => e.event === 'usage');
      expect(again.map((e) => Number(e.id))).toEqual(ids.slice(1000));
      console.log(
        `chatty turn: event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms; /health answered ${answeredWhileStreaming} times while it streamed`,
      );
    } finally {
      streaming = false;
      delete process.env['CHATTY_MESSAGES'];
    }
  }, 120_000);
});

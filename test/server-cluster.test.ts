// Two `atlas serve` processes with different homes on one real PostgreSQL share their accounts,
// tokens, conversation records, messages and event logs: a token made once works on both, a
// conversation answered on one is listed with its turns, stats and messages on the other, a revoke counts on both at once, and while
// the database is down a request gets 503 (not 401) and works again once it is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openState } from '../src/server/state/open.js';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { AGENT_FLAGS, auth, getJson, prompt, readSse, serversOfThisFile, startServe, waitUntil } from './helpers/server-fixtures.js';

const servers = serversOfThisFile('SIGTERM');
let pgServer: TestPostgres | undefined;

beforeAll(async () => {
  if (!postgresSkipReason) pgServer = await startPostgres();
}, 120_000);

afterAll(async () => pgServer?.stop());

describe.skipIf(postgresSkipReason !== undefined)(
  `servers on one PostgreSQL${postgresSkipReason ? ` (skipped: ${postgresSkipReason})` : ''}`,
  () => {
    it('share tokens and conversation records: made once, seen by both, revoked on both at once; 503 while the database is down', async () => {
      const url = await pgServer!.createDatabase('tokens');
      const env = { ATLAS_DATABASE_URL: url };
      const [homeA, homeB, homeCli] = [tempDir(), tempDir(), tempDir()];
      const [a, b] = await Promise.all([startServe(homeA, [], { env }), startServe(homeB, [], { env })]);
      servers.push(a, b);
      // Made from a third home: the token is in the database, not in any server's folder.
      const made = atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: homeCli, ...env } });
      expect(made.code, made.stderr).toBe(0);
      const { token, id } = JSON.parse(made.stdout);
      for (const s of [a, b]) expect((await getJson(s.url, token, '/conversations')).status).toBe(200);
      const turn = await prompt(a.url, token, 'shared', { prompt: 'hello' });
      expect(turn.events.at(-1)!.data).toMatchObject({ ok: true, turn: 1 });
      const onB = await getJson(b.url, token, '/conversations/shared');
      expect(onB.status).toBe(200);
      expect(onB.json.conversation).toMatchObject({
        id: 'shared',
        status: 'completed',
        turns: 1,
        stats: turn.events.at(-1)!.data.conversation,
      });
      expect((await getJson(b.url, token, '/conversations')).json.conversations.map((c: { id: string }) => c.id)).toEqual(['shared']);
      // Its messages, with their tool calls, read the same on both.
      const messagesA = (await getJson(a.url, token, '/conversations/shared/messages')).json.messages;
      expect(messagesA.length).toBeGreaterThan(1);
      expect((await getJson(b.url, token, '/conversations/shared/messages')).json.messages).toEqual(messagesA);
      const listed = JSON.parse(atlasSync(['--json', 'serve', 'token', 'list'], { env: { ATLAS_HOME: homeA, ...env } }).stdout);
      expect(listed.tokens.map((t: { id: string }) => t.id)).toEqual([id]);

      pgServer!.kill();
      try {
        const down = await getJson(a.url, token, '/conversations');
        expect(down.status).toBe(503);
        expect(down.json.error.code).toBe('state_unavailable');
      } finally {
        pgServer!.start();
      }
      expect((await getJson(a.url, token, '/conversations')).status).toBe(200);

      expect(atlasSync(['serve', 'token', 'revoke', id], { env: { ATLAS_HOME: homeB, ...env } }).code).toBe(0);
      for (const s of [a, b]) expect((await getJson(s.url, token, '/conversations')).status).toBe(401);
      // The password of a URL is never printed, even when the database cannot be reached.
      const refused = atlasSync(['serve', 'token', 'list'], {
        env: { ATLAS_HOME: homeA, ATLAS_DATABASE_URL: 'postgres://atlas:hunter2@127.0.0.1:1/x' },
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('postgres://atlas:***@127.0.0.1:1/x');
      expect(refused.stderr).not.toContain('hunter2');
    }, 60_000);

    it('a turn on one server streams live to a client of the other; SIGKILLed, it is marked interrupted once its lease expires and recovered there, ids going on', async () => {
      const url = await pgServer!.createDatabase('replicas');
      const env = { ATLAS_DATABASE_URL: url };
      const flags = [...AGENT_FLAGS, '-c', 'server.lease_ttl=3s'];
      const [homeA, homeB] = [tempDir(), tempDir()];
      const [a, b] = await Promise.all([startServe(homeA, [], { env, flags }), startServe(homeB, [], { env, flags })]);
      servers.push(a, b);
      const made = atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: homeA, ...env } });
      const { token } = JSON.parse(made.stdout);
      const running = async (s: ServeProcess) =>
        (await getJson(s.url, token, '/conversations/c')).json.conversation?.status === 'running' ? true : undefined;

      // Turn 1 on A; a client of B follows it live from the start, and gets A's log exactly.
      const onA = readSse(
        await fetch(`${a.url}/conversations/c/sandbox/sb`, {
          method: 'POST',
          headers: auth(token),
          body: JSON.stringify({ prompt: 'sleep:5000 first' }),
        }),
      ); // long enough for B to see it running and refuse a second turn on a loaded machine
      await waitUntil(() => running(b), 10_000, 'B to see the turn running');
      const busy = await fetch(`${b.url}/conversations/c/sandbox/sb`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'at once' }),
      });
      expect(busy.status).toBe(409);
      const onB = await readSse(await fetch(`${b.url}/conversations/c/events`, { headers: auth(token, { 'last-event-id': '0' }) }));
      expect(onB.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn: 1 } });
      const first = await onA;
      expect(onB.map((e) => e.id)).toEqual(Array.from({ length: onB.length }, (_, i) => String(i + 1)));
      expect(onB.map((e) => [e.id, e.event])).toEqual(expect.arrayContaining(first.map((e) => [e.id, e.event])));

      // Turn 2 on A, which dies mid-turn: B waits for the lease to expire, then marks it interrupted.
      void fetch(`${a.url}/conversations/c/sandbox/sb`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'sleep:30000 second' }),
      }).then(
        (r) => r.body?.cancel().catch(() => undefined),
        () => undefined,
      );
      await waitUntil(() => running(b), 10_000, 'B to see turn 2 running');
      a.child.kill('SIGKILL');
      await a.exited;
      expect((await getJson(b.url, token, '/conversations/c')).json.conversation.status).toBe('running');
      await waitUntil(
        async () => ((await getJson(b.url, token, '/conversations/c')).json.conversation.status === 'interrupted' ? true : undefined),
        15_000,
        'the lease to expire',
      );

      // B recovers it; every id is handed out once, in order, across both servers.
      const recovered = await readSse(await fetch(`${b.url}/conversations/c/recover`, { method: 'POST', headers: auth(token) }));
      expect(recovered.at(-1)!.data).toMatchObject({ ok: true, turn: 3 });
      const replay = await readSse(await fetch(`${b.url}/conversations/c/events`, { headers: auth(token, { 'last-event-id': '0' }) }));
      expect(replay.map((e) => Number(e.id))).toEqual(Array.from({ length: replay.length }, (_, i) => i + 1));
      expect(replay.filter((e) => e.event === 'interrupted').map((e) => e.data.turn)).toEqual([2]);
      expect(replay.at(-1)).toMatchObject({ event: 'usage', data: { turn: 3 } });
    }, 90_000);

    /** Server A (3 s leases) on a new database, running a long turn of conversation `id`; the state opened beside it. */
    async function longTurnOnA(database: string, id: string) {
      const url = await pgServer!.createDatabase(database);
      const env = { ATLAS_DATABASE_URL: url };
      const home = tempDir();
      const a = await startServe(home, [], { env, flags: [...AGENT_FLAGS, '-c', 'server.lease_ttl=3s'] });
      servers.push(a);
      const { token } = JSON.parse(
        atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: home, ...env } }).stdout,
      );
      const turnClient = fetch(`${a.url}/conversations/${id}/sandbox/sb`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'sleep:30000 long' }),
      }).then((r) => readSse(r));
      await waitUntil(
        async () => ((await getJson(a.url, token, `/conversations/${id}`)).json.conversation?.status === 'running' ? true : undefined),
        10_000,
        'the turn to run',
      );
      return { a, turnClient, state: await openState({ home: tempDir(), url }) };
    }

    it("a server whose turn lease was taken over stops the turn and publishes nothing more about it; its client gets the new holder's interrupted event", async () => {
      const { a, turnClient, state } = await longTurnOnA('fenced', 'f');
      // Another server takes the lease over (as if A had stalled past its expiry).
      try {
        const lease = (await state.getLease('conversation:alice/f'))!;
        const taken = await state.claimLease('conversation:alice/f', 'other-server', 60_000, lease.expires_at + 1);
        expect(taken).toMatchObject({ ok: true, token: lease.token + 1 });
        const before = await state.lastEventId('conversation:alice/f');
        await waitUntil(() => a.lines.some((l) => l.includes('lease lost')) || undefined, 10_000, 'A to find its lease lost');
        await waitUntil(() => a.lines.some((l) => l.includes('its lease was taken over')) || undefined, 15_000, 'A to stop the turn');
        // Nothing from A after the takeover: no error, no usage, and the record is as A left it running.
        expect(await state.lastEventId('conversation:alice/f')).toBe(before);
        expect((await state.getConversation('alice', 'f'))?.status).toBe('running');
        // The new holder marks the turn interrupted: the turn's own client on A gets that event
        // (A reads what others append to a turn it lost) and its stream ends there, no event missed.
        await state.appendEvent(
          'conversation:alice/f',
          'interrupted',
          { turn: 1, reason: 'taken over' },
          { lease: 'conversation:alice/f', token: lease.token + 1 },
        );
        const got = await turnClient;
        expect(got.at(-1)).toMatchObject({ event: 'interrupted', data: { turn: 1 } });
        expect(got.map((e) => Number(e.id))).toEqual(Array.from({ length: before + 1 }, (_, i) => i + 1));
      } finally {
        await state.close();
      }
    }, 60_000);

    it('a turn that lost its lease to a sweep that left it free marks itself interrupted: its client and the record are not left running', async () => {
      const { a, turnClient, state } = await longTurnOnA('lost-free', 'g');
      // What a sweep does that finds the turn not yet recorded running: claims the lease and gives it back.
      try {
        const lease = (await state.getLease('conversation:alice/g'))!;
        const taken = await state.claimLease('conversation:alice/g', 'other-server', 60_000, lease.expires_at + 1);
        expect(taken.ok).toBe(true);
        if (taken.ok) await state.releaseLease('conversation:alice/g', taken.token);
        const got = await turnClient;
        expect(got.at(-1)).toMatchObject({ event: 'interrupted', data: { turn: 1, reason: 'its lease was lost' } });
        expect(got.map((e) => Number(e.id))).toEqual(Array.from({ length: got.length }, (_, i) => i + 1));
        expect((await state.getConversation('alice', 'g'))?.status).toBe('interrupted');
        expect(a.lines.some((l) => l.includes('its lease was lost and left free'))).toBe(true);
      } finally {
        await state.close();
      }
    }, 60_000);
  },
);

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openState } from '../src/server/state/open.js';
import type { ConversationRow, ServerState } from '../src/server/state/types.js';
import { LeaseLostError } from '../src/server/state/types.js';
import { backends, conversation, message, type Target, useStateServers } from './helpers/server-state-fixtures.js';

useStateServers();

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`server state on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ''}`, () => {
    let target: Target;
    let state: ServerState;

    beforeAll(async () => {
      target = await backend.target();
      state = await openState(target);
    });
    afterAll(async () => state?.close());

    it('migrates once: opening again (or three at once) applies nothing and keeps the data', async () => {
      expect(state.backend).toBe(backend.name);
      await state.ensureAccount('keep');
      const again = await Promise.all([openState(target), openState(target), openState(target)]);
      for (const s of again) {
        expect((await s.listAccounts()).map((a) => a.name)).toContain('keep');
        await s.close();
      }
    });

    it('keeps tokens as hashes, finds them by hash, lists and revokes them for good', async () => {
      const sha = 'a'.repeat(64);
      await state.addToken({
        id: 'tok-1',
        account: 'alice',
        sha256: sha,
        created_at: '2026-11-25T10:00:00.000Z',
        expires_at: null,
        read_only: true,
      });
      await state.addToken({
        id: 'tok-2',
        account: 'bob',
        sha256: 'b'.repeat(64),
        created_at: '2026-11-25T10:00:01.000Z',
        expires_at: '2026-12-01T00:00:00.000Z',
        read_only: false,
      });
      expect(await state.tokenByHash(sha)).toEqual({
        id: 'tok-1',
        account: 'alice',
        sha256: sha,
        created_at: '2026-11-25T10:00:00.000Z',
        expires_at: null,
        read_only: true,
        revoked_at: null,
      });
      expect((await state.listTokens()).map((t) => t.id)).toEqual(['tok-1', 'tok-2']);
      expect((await state.listAccounts()).map((a) => a.name)).toEqual(expect.arrayContaining(['alice', 'bob']));
      await expect(
        state.addToken({
          id: 'tok-3',
          account: 'bob',
          sha256: sha,
          created_at: '2026-11-25T10:00:02.000Z',
          expires_at: null,
          read_only: false,
        }),
      ).rejects.toThrow();
      expect((await state.revokeToken('tok-2'))?.account).toBe('bob');
      expect(await state.revokeToken('tok-2')).toBeUndefined();
      expect(await state.tokenByHash('b'.repeat(64))).toBeUndefined();
      expect((await state.listTokens()).map((t) => t.id)).toEqual(['tok-1']);
      // A revoked token's id stays taken: adding it again (an old file imported) changes nothing.
      expect(
        await state.addToken({
          id: 'tok-2',
          account: 'bob',
          sha256: 'b'.repeat(64),
          created_at: '2026-11-25T10:00:01.000Z',
          expires_at: null,
          read_only: false,
        }),
      ).toBe(false);
      expect(await state.tokenByHash('b'.repeat(64))).toBeUndefined();
      expect((await state.allTokens()).map((t) => [t.id, t.revoked_at === null])).toEqual([
        ['tok-1', true],
        ['tok-2', false],
      ]);
    });

    it('stores conversations with their stats, newest first, per account', async () => {
      await state.putConversation(conversation('alice', 'c1', '2026-11-25T10:00:01.000Z'));
      await state.putConversation(conversation('alice', 'c2', '2026-11-25T10:00:02.000Z'));
      await state.putConversation(conversation('carol', 'c1', '2026-11-25T10:00:03.000Z'));
      const stats = {
        messages_exchanged: 4,
        total_input_tokens: 12_000_000_000,
        total_output_tokens: 345,
        total_cache_tokens: 30,
        cache_read_tokens: 10,
        cache_creation_tokens: 20,
        cost_usd: 0.125,
        partial: false,
        models: [{ model: 'm', input_tokens: 1 }],
      };
      const turn = { turn: 1, started_at: '2026-11-25T10:00:04.000Z', ended_at: '2026-11-25T10:00:05.000Z', ok: true, error: null };
      await state.putConversation(
        conversation('alice', 'c1', '2026-11-25T10:00:05.000Z', {
          turns: 1,
          status: 'completed',
          last_turn: turn,
          stats: stats as ConversationRow['stats'],
        }),
      );
      const c1 = await state.getConversation('alice', 'c1');
      expect(c1).toMatchObject({ turns: 1, status: 'completed', last_turn: turn, stats, created_at: '2026-11-25T10:00:00.000Z' });
      expect((await state.listConversations('alice')).map((c) => c.id)).toEqual(['c1', 'c2']);
      expect(await state.getConversation('bob', 'c1')).toBeUndefined();
      // A conversation's account is recorded with it (one statement on PostgreSQL).
      expect((await state.listAccounts()).map((a) => a.name)).toEqual(expect.arrayContaining(['alice', 'carol']));
      await state.removeConversation('alice', 'c2');
      expect((await state.listConversations('alice')).map((c) => c.id)).toEqual(['c1']);
    });

    it('keeps messages with their tool calls turn by turn in the order put in, replaces a repeated key, and batches large writes', async () => {
      await state.putMessages([message('c1', 'm3', 50, 2), message('c1', 'm2', 200), message('c1', 'm1', 100)]);
      await state.putMessages([{ ...message('c1', 'm1', 100), body: 'edited' }]);
      const all = await state.listMessages('alice', 'c1');
      // Turn by turn, in the order first put in (a replaced message keeps its place).
      expect(all.map((m) => m.key)).toEqual(['m2', 'm1', 'm3']);
      expect(all[1]).toMatchObject({
        body: 'edited',
        role: 2,
        tokens: 7,
        tool_calls: [{ name: 'Bash', input: { command: 'ls' }, status: 'success' }],
      });
      expect((await state.listMessages('alice', 'c1', { turn: 2 })).map((m) => m.key)).toEqual(['m3']);
      const many = Array.from({ length: 1_200 }, (_, i) => message('big', `k${i}`, 1_000 + i));
      await state.putMessages(many);
      expect(await state.listMessages('alice', 'big')).toHaveLength(1_200);
      expect((await state.listMessages('alice', 'big', { limit: 3 })).map((m) => m.key)).toEqual(['k0', 'k1', 'k2']);
      await state.removeConversation('alice', 'big');
      expect(await state.listMessages('alice', 'big')).toEqual([]);
    });

    it('hands out event ids unique and increasing per log, also to two connections appending at once', async () => {
      const other = await openState(target);
      try {
        const appends = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? state : other).appendEvent('conv:alice/c1', 'delta', { i }));
        const ids = (await Promise.all(appends)).map((e) => e.id).sort((a, b) => a - b);
        expect(ids).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        expect((await state.appendEvent('conv:alice/c2', 'start', {})).id).toBe(1);
        const after = await other.eventsAfter('conv:alice/c1', 35);
        expect(after.map((e) => e.id)).toEqual([36, 37, 38, 39, 40]);
        expect(after[0]).toMatchObject({ type: 'delta', data: { i: expect.any(Number) } });
        expect(await state.lastEventId('conv:alice/c1')).toBe(40);
        // A removed log made again continues after its old ids: a client's Last-Event-ID never repeats.
        await state.dropEvents('conv:alice/c1');
        expect(await state.eventsAfter('conv:alice/c1', 0)).toEqual([]);
        expect((await other.appendEvent('conv:alice/c1', 'start', {})).id).toBe(41);
      } finally {
        await other.close();
      }
    });

    it('imports events with their ids once, and the counter continues after the highest id or the floor', async () => {
      const events = [1, 2, 5].map((id) => ({ id, type: 'delta', at: '2026-11-25T10:00:00.000Z', data: { id } }));
      expect(await state.importEvents('imported', events)).toBe(3);
      expect(await state.importEvents('imported', events)).toBe(0);
      expect((await state.eventsAfter('imported', 0)).map((e) => e.id)).toEqual([1, 2, 5]);
      expect((await state.appendEvent('imported', 'next', {})).id).toBe(6);
      expect(await state.importEvents('removed-log', [], 9)).toBe(0);
      expect((await state.appendEvent('removed-log', 'next', {})).id).toBe(10);
      // Never down: an import of older events leaves a higher counter alone.
      await state.importEvents('imported', [{ id: 3, type: 'late', at: '2026-11-25T10:00:00.000Z', data: {} }]);
      expect(await state.lastEventId('imported')).toBe(6);
    });

    it('leases: one holder at a time, taken over after expiry with a higher token, and the old holder fenced out', async () => {
      const t0 = Date.now();
      const a = await state.claimLease('conv:alice/c1', 'replica-a', 1_000, t0);
      expect(a).toEqual({ ok: true, token: 1 });
      const refused = await state.claimLease('conv:alice/c1', 'replica-b', 1_000, t0 + 10);
      expect(refused).toMatchObject({ ok: false, holder: { holder: 'replica-a', token: 1 } });
      expect(await state.renewLease('conv:alice/c1', 'replica-a', 1, 1_000, t0 + 500)).toBe(true);
      expect(await state.expiredLeases(t0 + 1_000)).toEqual([]);
      expect((await state.expiredLeases(t0 + 1_600)).map((l) => l.name)).toEqual(['conv:alice/c1']);
      await state.appendEvent('conv:alice/c1', 'delta', { by: 'a' }, { lease: 'conv:alice/c1', token: 1 });
      const b = await state.claimLease('conv:alice/c1', 'replica-b', 1_000, t0 + 1_600);
      expect(b).toEqual({ ok: true, token: 2 });
      const last = await state.lastEventId('conv:alice/c1');
      await expect(state.appendEvent('conv:alice/c1', 'delta', { by: 'a' }, { lease: 'conv:alice/c1', token: 1 })).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      // The refused append used no id.
      expect(await state.lastEventId('conv:alice/c1')).toBe(last);
      expect(await state.renewLease('conv:alice/c1', 'replica-a', 1, 1_000, t0 + 1_700)).toBe(false);
      await state.releaseLease('conv:alice/c1', 1);
      expect((await state.getLease('conv:alice/c1'))?.holder).toBe('replica-b');
      await state.releaseLease('conv:alice/c1', 2);
      await expect(state.appendEvent('conv:alice/c1', 'delta', {}, { lease: 'conv:alice/c1', token: 2 })).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      expect(await state.claimLease('conv:alice/c1', 'replica-c', 1_000, t0 + 1_800)).toEqual({ ok: true, token: 3 });
    });

    it("fenced appends racing the turn's end: ids stay contiguous, a refused append uses none, and neither waits on the other for good", async () => {
      const claim = await state.claimLease('conv:alice/race', 'a', 60_000);
      if (!claim.ok) throw new Error('lease not claimed');
      const fence = { lease: 'conv:alice/race', token: claim.token };
      const appends = Array.from({ length: 20 }, (_, i) =>
        state.appendEvent('conv:alice/race', 'delta', { i }, fence).then(
          () => 'stored',
          (e: unknown) => (e instanceof LeaseLostError ? 'refused' : Promise.reject(e)),
        ),
      );
      const finished = state.finishTurn(undefined, 'conv:alice/race', [{ type: 'usage', data: {} }], fence);
      const results = await Promise.all(appends);
      await finished;
      const events = await state.eventsAfter('conv:alice/race', 0);
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
      expect(events).toHaveLength(results.filter((r) => r === 'stored').length + 1);
      expect((await state.getLease('conv:alice/race'))?.holder).toBe('');
    });

    it('of replicas racing for one expired lease exactly one wins', async () => {
      await state.claimLease('race', 'dead', 1, 0);
      const claims = await Promise.all(['r1', 'r2', 'r3', 'r4', 'r5'].map((r) => state.claimLease('race', r, 60_000)));
      expect(claims.filter((c) => c.ok)).toHaveLength(1);
    });

    it('keeps the task index per account', async () => {
      const row = {
        task_id: 'task-20261125-100000',
        account: 'alice',
        workspace: 'w',
        dir: '/d',
        repo: '/r',
        template: 'default',
        created_at: '2026-11-25T10:00:00.000Z',
        host: 'build-1',
      };
      await state.putTask(row);
      await state.putTask({ ...row, task_id: 'task-20261125-100001', account: 'bob' });
      expect(await state.getTask(row.task_id)).toEqual(row);
      expect((await state.listTasks('alice')).map((t) => t.task_id)).toEqual([row.task_id]);
      expect(await state.getTask('task-none')).toBeUndefined();
    });
  });
}

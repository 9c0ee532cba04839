// The server state layer (src/server/state) against both backends: the embedded SQLite file and a
// real PostgreSQL started by the test. One suite, run once per backend.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../src/domain/redact-url.js';
import { followLog } from '../src/server/state/follow.js';
import { databaseUrl, openState, stateFilePath, whenNotBusy } from '../src/server/state/open.js';
import type { ConversationRow, ServerState, StoredMessage } from '../src/server/state/types.js';
import { LeaseLostError } from '../src/server/state/types.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';

let pgServer: TestPostgres | undefined;
let dbCount = 0;
const homes: string[] = [];

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function newHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'atlas-state-'));
  homes.push(home);
  return home;
}

beforeAll(async () => {
  if (!postgresSkipReason) pgServer = await startPostgres();
}, 120_000);

afterAll(async () => {
  await pgServer?.stop();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

interface Target {
  home: string;
  url: string | undefined;
}

const backends = [
  { name: 'sqlite', skip: undefined as string | undefined, target: async (): Promise<Target> => ({ home: newHome(), url: undefined }) },
  {
    name: 'postgres',
    skip: postgresSkipReason,
    target: async (): Promise<Target> => ({ home: newHome(), url: await pgServer!.createDatabase(`t${++dbCount}`) }),
  },
];

function conversation(account: string, id: string, updated: string, extra: Partial<ConversationRow> = {}): ConversationRow {
  return {
    id,
    account,
    agent_id: null,
    provider: 'command',
    sandbox_id: null,
    session_id: `s-${id}`,
    created_at: '2026-11-25T10:00:00.000Z',
    updated_at: updated,
    status: 'idle',
    turns: 0,
    last_turn: null,
    stats: {
      messages_exchanged: 0,
      total_input_tokens: 0,
      total_output_tokens: null,
      total_cache_tokens: 0,
      cache_read_tokens: 0,
      cache_creation_tokens: 0,
      cost_usd: null,
      partial: true,
      models: [],
    },
    ...extra,
  };
}

function message(id: string, key: string, timestamp: number, turn = 1): StoredMessage {
  return {
    account: 'alice',
    conversation_id: id,
    key,
    body: `body of ${key}`,
    role: 2,
    timestamp,
    tokens: 7,
    turn,
    tool_calls: [
      { id: `t-${key}`, type: 'tool_use', name: 'Bash', input: { command: 'ls' }, output: 'a\nb', status: 'success', error: '' },
    ],
  };
}

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

describe('server state: the embedded file and failures', () => {
  it('keeps SQLite in $ATLAS_HOME/server/state.db, mode 0600, in WAL mode', async () => {
    const home = newHome();
    const state = await openState({ home, url: '' });
    await state.close();
    expect(statSync(stateFilePath(home)).mode & 0o777).toBe(0o600);
    const raw = new Database(stateFilePath(home), { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('waits for another process that holds the write lock past busy_timeout, instead of failing to open', async () => {
    const home = newHome();
    await (await openState({ home, url: '' })).close();
    // Another process on this home holds the write lock for 6 s (busy_timeout is 5 s).
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(stateFilePath(home))}); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => db.exec('COMMIT'), 6000);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((r) => holder.on('close', r));
    await new Promise((r) => holder.stdout.once('data', r));
    const started = Date.now();
    const state = await openState({ home, url: '' });
    expect(Date.now() - started).toBeGreaterThan(5000);
    await state.putConversation(conversation('alice', 'c1', '2026-11-25T10:00:00.000Z'));
    expect((await state.getConversation('alice', 'c1'))?.id).toBe('c1');
    await state.close();
    await exited;
  }, 30_000);

  it('tries a busy step again until its time is up, and any other failure at once', async () => {
    const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    let calls = 0;
    await expect(
      whenNotBusy(
        () =>
          ++calls < 3
            ? (() => {
                throw busy();
              })()
            : 'open',
        5_000,
      ),
    ).resolves.toBe('open');
    expect(calls).toBe(3);
    const started = Date.now();
    await expect(
      whenNotBusy(() => {
        throw busy();
      }, 300),
    ).rejects.toThrow('database is locked');
    expect(Date.now() - started).toBeLessThan(2_000);
    calls = 0;
    await expect(
      whenNotBusy(() => {
        calls++;
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }),
    ).rejects.toThrow('disk I/O error');
    expect(calls).toBe(1);
  });

  it('refuses a damaged row with the table it is in', async () => {
    const home = newHome();
    const state = await openState({ home, url: undefined });
    await state.putConversation(conversation('alice', 'c1', '2026-11-25T10:00:00.000Z'));
    const raw = new Database(stateFilePath(home));
    raw.prepare("update conversations set models = 'not json'").run();
    raw.close();
    await expect(state.getConversation('alice', 'c1')).rejects.toThrow(/a row of conversations is not valid \(models is not JSON\)/);
    await state.close();
  });

  it('says which database it cannot reach, never with its password', async () => {
    const url = 'postgres://atlas:s3cret-pass@127.0.0.1:1/atlas';
    expect(redactUrl(url)).toBe('postgres://atlas:***@127.0.0.1:1/atlas');
    expect(redactUrl('postgres://127.0.0.1/atlas')).toBe('postgres://127.0.0.1/atlas');
    expect(databaseUrl('', { ATLAS_DATABASE_URL: url })).toBe(url);
    expect(databaseUrl(' postgres://x/y ', { ATLAS_DATABASE_URL: url })).toBe('postgres://x/y');
    const error = await openState({ home: newHome(), url }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/server state at postgres:\/\/atlas:\*\*\*@127\.0\.0\.1:1\/atlas/);
    expect(error?.message).not.toContain('s3cret-pass');
  });

  it.skipIf(postgresSkipReason !== undefined)(
    'fails while PostgreSQL is down (a follower reports it and keeps its place) and works again once it is back',
    async () => {
      const url = await pgServer!.createDatabase('downtime');
      const state = await openState({ home: newHome(), url });
      const seen: number[] = [];
      const errors: Error[] = [];
      const follower = followLog(state, 'log', 0, (e) => seen.push(e.id), { intervalMs: 20, onError: (e) => errors.push(e) });
      try {
        expect((await state.appendEvent('log', 'a', {})).id).toBe(1);
        await waitFor(() => seen.length === 1);
        pgServer!.kill();
        await expect(state.appendEvent('log', 'b', {})).rejects.toThrow();
        // The follower reports the failed polls and keeps its place.
        await waitFor(() => errors.length > 0);
        pgServer!.start();
        expect((await state.appendEvent('log', 'c', {})).id).toBe(2);
        await waitFor(() => seen.length === 2);
        expect(seen).toEqual([1, 2]);
      } finally {
        follower.stop();
        await state.close();
      }
    },
  );
});

// Failover between `atlas serve` replicas on one real PostgreSQL and one s3rver store (issue 23):
// a replica SIGKILLed mid-turn leaves its lease to expire; another replica's background sweep
// takes it over, marks the turn interrupted (a client following on a surviving replica sees the
// `interrupted` event) and, with server.auto_recover, recovers it from the last pushed version,
// once. A replica that stalls past its lease (SIGSTOP) and comes back publishes nothing: its
// turn's push is refused right before its version would be written.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATE_FILE_NAME } from '../src/domain/sync-state.js';
import { sweepDelay } from '../src/server/cluster/lease-sweep.js';
import { conversationFiles } from '../src/server/conversations/conversation-store.js';
import { logKey, parseLogKey } from '../src/server/state/types.js';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';
import type { S3Server } from './helpers/s3rver.js';
import { listKeys, startS3rver } from './helpers/s3rver.js';
import type { ServeProcess, SseEvent } from './helpers/server-fixtures.js';
import { AGENT_FLAGS, auth, getJson, prompt, readSse, serversOfThisFile, startServe, waitUntil } from './helpers/server-fixtures.js';

const servers = serversOfThisFile('SIGTERM');
let pgServer: TestPostgres | undefined;
let s3: S3Server | undefined;

beforeAll(async () => {
  if (postgresSkipReason) return;
  [pgServer, s3] = await Promise.all([startPostgres(), startS3rver('atlas-failover')]);
}, 120_000);

afterAll(async () => {
  await Promise.all([pgServer?.stop(), s3?.stop()]);
});

/** Replicas on one database and one store, with a 3 s lease. */
async function replicas(
  database: string,
  n: number,
  extra: string[] = [],
): Promise<{ servers: ServeProcess[]; homes: string[]; token: string }> {
  const url = await pgServer!.createDatabase(database);
  const env = { ATLAS_DATABASE_URL: url, ...s3!.env };
  const flags = [
    ...AGENT_FLAGS,
    '-c',
    'server.lease_ttl=3s',
    '-c',
    `sync.store=${s3!.config.store}/${database}`,
    '-c',
    `sync.s3.endpoint=${s3!.config.endpoint}`,
    '-c',
    'sync.s3.force_path_style=true',
    '-c',
    'sync.init_from_store=true',
    ...extra,
  ];
  const homes = Array.from({ length: n }, () => tempDir());
  const started = await Promise.all(homes.map((home) => startServe(home, [], { env, flags })));
  servers.push(...started);
  const made = atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: homes[0]!, ...env } });
  expect(made.code, made.stderr).toBe(0);
  return { servers: started, homes, token: JSON.parse(made.stdout).token };
}

const versionsOf = async (database: string, tree: string) =>
  (await listKeys(s3!, `stores/${database}/${tree}/`)).filter((k) => k.endsWith(`/${STATE_FILE_NAME}`));

describe.skipIf(postgresSkipReason !== undefined)(
  `failover between replicas${postgresSkipReason ? ` (skipped: ${postgresSkipReason})` : ''}`,
  () => {
    it("a replica SIGKILLed mid-turn: a survivor's sweep marks the turn interrupted (its follower sees it) and one replica recovers it from the last pushed version", async () => {
      const {
        servers: [a, b, c],
        homes,
        token,
      } = await replicas('sweep', 3, ['-c', 'server.auto_recover=true']);
      const status = async (s: ServeProcess) => (await getJson(s.url, token, '/conversations/c')).json.conversation;

      const first = await prompt(a!.url, token, 'c', { prompt: 'first' }, 'sb');
      expect(first.events.at(-1)!.data).toMatchObject({ ok: true, turn: 1 });
      const lastId = first.events.at(-1)!.id!;
      // Turn 2's own client on A keeps what arrives before A dies.
      const onA: SseEvent[] = [];
      const turnOnA = fetch(`${a!.url}/conversations/c/sandbox/sb`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'sleep:30000 second' }),
      })
        .then((r) => readSse(r, (e) => (onA.push(e), false)))
        .catch(() => undefined);
      await waitUntil(
        async () => ((await status(b!))?.status === 'running' && onA.length > 0 ? true : undefined),
        10_000,
        'B to see turn 2 running',
      );
      // A client of B follows the conversation (nobody reads it over GET: only the sweep can find the turn cut off).
      const following = readSse(
        await fetch(`${b!.url}/conversations/c/events`, { headers: auth(token, { 'last-event-id': lastId }) }),
        (e) => e.event === 'interrupted',
      );
      a!.child.kill('SIGKILL');
      await a!.exited;
      await turnOnA;
      const seen = await following;
      expect(seen.at(-1)).toMatchObject({ event: 'interrupted', data: { turn: 2, reason: 'no owner' } });
      // A's client, cut off, reconnects to C with Last-Event-ID and reads on: together, exactly the
      // ids B's client got, each once.
      const resumed = await readSse(
        await fetch(`${c!.url}/conversations/c/events`, { headers: auth(token, { 'last-event-id': onA.at(-1)!.id! }) }),
        (e) => e.event === 'interrupted',
      );
      const ids = [...onA, ...resumed].map((e) => Number(e.id));
      expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => Number(lastId) + 1 + i));
      expect(ids).toEqual(seen.map((e) => Number(e.id)));

      // Recovered automatically, by exactly one of the survivors, on the store's last version.
      const done = await waitUntil(
        async () => {
          const conv = await status(c!);
          return conv?.status === 'completed' && conv.turns === 3 ? conv : undefined;
        },
        30_000,
        'the turn to be recovered',
      );
      expect(done.turns).toBe(3);
      const recoverers = [1, 2].filter((i) => [b, c][i - 1]!.lines.some((l) => l.includes('recovering an interrupted turn')));
      expect(recoverers).toHaveLength(1);
      const notes = readFileSync(join(conversationFiles(homes[recoverers[0]!]!, 'alice', 'c').workspace, 'notes.txt'), 'utf8');
      expect(notes.startsWith('first\nThe previous turn of this conversation was interrupted')).toBe(true);
      const replay = await readSse(
        await fetch(`${b!.url}/conversations/c/events`, { headers: auth(token, { 'last-event-id': '0' }) }),
        (e) => e.event === 'usage' && e.data.turn === 3,
      );
      expect(replay.map((e) => Number(e.id))).toEqual(Array.from({ length: replay.length }, (_, i) => i + 1));
      expect(replay.filter((e) => e.event === 'interrupted').map((e) => e.data.turn)).toEqual([2]);
      expect(replay.filter((e) => e.event === 'usage').map((e) => [e.data.turn, e.data.ok])).toEqual([
        [1, true],
        [3, true],
      ]);
    }, 90_000);

    it("a replica that stalls past its lease and comes back publishes nothing: its turn's push is refused before the version is written", async () => {
      const {
        servers: [a, b],
        homes,
        token,
      } = await replicas('fenced-push', 2);
      const status = async (s: ServeProcess) => (await getJson(s.url, token, '/conversations/f')).json.conversation;
      const tree = 'conv.alice.f';
      expect((await prompt(a!.url, token, 'f', { prompt: 'first' }, 'sb')).events.at(-1)!.data).toMatchObject({ ok: true, turn: 1 });
      const versions = await versionsOf('fenced-push', tree);
      expect(versions).toHaveLength(1);
      void fetch(`${a!.url}/conversations/f/sandbox/sb`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'sleep:30000 second' }),
      }).then(
        (r) => r.body?.cancel().catch(() => undefined),
        () => undefined,
      );
      await waitUntil(async () => ((await status(b!))?.status === 'running' ? true : undefined), 10_000, 'the turn to run');
      // The turn's work so far: a push would make a version of it.
      writeFileSync(join(conversationFiles(homes[0]!, 'alice', 'f').workspace, 'half-done.txt'), 'half\n');
      a!.child.kill('SIGSTOP');
      try {
        // B's sweep (nobody reads the conversation meanwhile) marks it interrupted once the lease
        // expires; without auto_recover, it is left for POST .../recover.
        await waitUntil(
          () => b!.lines.some((l) => l.includes("turn interrupted: its server's lease expired")) || undefined,
          30_000,
          "B's sweep to mark the turn interrupted",
        );
        expect((await status(b!)).status).toBe('interrupted');
      } finally {
        a!.child.kill('SIGCONT');
      }
      await waitUntil(
        () => a!.lines.some((l) => l.includes("push refused: the turn's lease was taken over")) || undefined,
        15_000,
        'A to refuse its push',
      );
      await waitUntil(() => a!.lines.some((l) => l.includes('its lease was taken over')) || undefined, 15_000, 'A to stop the turn');
      expect(await versionsOf('fenced-push', tree)).toEqual(versions);
      expect((await status(b!)).status).toBe('interrupted');
      expect(b!.lines.some((l) => l.includes('recovering an interrupted turn'))).toBe(false);
      // The turn is B's to recover now, from the version turn 1 pushed.
      const recovered = await readSse(await fetch(`${b!.url}/conversations/f/recover`, { method: 'POST', headers: auth(token) }));
      expect(recovered.at(-1)!.data).toMatchObject({ ok: true, turn: 3 });
      expect(
        readFileSync(join(conversationFiles(homes[1]!, 'alice', 'f').workspace, 'notes.txt'), 'utf8').startsWith(
          'first\nThe previous turn',
        ),
      ).toBe(true);
    }, 90_000);
  },
);

describe("the lease sweep's pieces", () => {
  it('looks about twice per lease_ttl, jittered by a quarter; one parseLogKey reads every log and lease key', () => {
    expect([sweepDelay(3000, () => 0), sweepDelay(3000, () => 0.5), sweepDelay(3000, () => 1)]).toEqual([1125, 1500, 1875]);
    expect(parseLogKey(logKey.conversation('alice', 'c-1'))).toEqual({ kind: 'conversation', account: 'alice', id: 'c-1' });
    expect(parseLogKey(logKey.task('task-1'))).toEqual({ kind: 'task', taskId: 'task-1' });
    expect(parseLogKey(logKey.account('alice'))).toEqual({ kind: 'account', account: 'alice' });
    for (const name of ['conversation:alice/', 'conversation:/c', 'conversation:alice', 'task:', 'other:x', 'plain'])
      expect(parseLogKey(name)).toBeUndefined();
  });
});

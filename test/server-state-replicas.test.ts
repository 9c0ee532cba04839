// Replicas on one shared state, as real processes: a writer SIGKILLed mid-turn loses its lease when
// it expires, another replica takes over with a higher token and continues the log, a follower in a
// third process sees every event once and in order, and the dead replica's token publishes nothing.
// On PostgreSQL (the cluster) and on the SQLite file (several processes on one machine).

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openState } from '../src/server/state/open.js';
import { compileFixture } from './helpers/compile-fixture.js';
import { tempDir } from './helpers/core-fixtures.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';

let fixture: string;
let pgServer: TestPostgres | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  fixture = await compileFixture('test/fixtures/server/state-replica.ts', ['better-sqlite3', 'pg']);
  if (!postgresSkipReason) pgServer = await startPostgres();
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await pgServer?.stop();
});

interface Replica {
  child: ChildProcess;
  lines: Record<string, any>[];
  exited: Promise<number | null>;
  /** Resolves with the first line that matches. */
  saw: (match: (line: Record<string, any>) => boolean) => Promise<Record<string, any>>;
}

function replica(env: Record<string, string>): Replica {
  const child = spawn(process.execPath, [fixture], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: Record<string, any>[] = [];
  const waiters: { match: (l: Record<string, any>) => boolean; resolve: (l: Record<string, any>) => void }[] = [];
  let partial = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.on('data', (d) => {
    partial += d;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) {
      const line = JSON.parse(text) as Record<string, any>;
      lines.push(line);
      for (const w of waiters.filter((x) => x.match(line))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return {
    child,
    lines,
    exited,
    // A process that ends without the line fails the test at once, with what it said.
    saw: (match) => {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        void exited.then((code) =>
          reject(new Error(`the replica exited (${code}) before the line the test waits for: ${stderr}${JSON.stringify(lines)}`)),
        );
      });
    },
  };
}

const backends = [
  { name: 'SQLite (several processes on one home)', skip: undefined as string | undefined, url: async () => '' },
  { name: 'PostgreSQL', skip: postgresSkipReason, url: async () => pgServer!.createDatabase(`replicas${Date.now()}`) },
];

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`replicas on ${backend.name}`, () => {
    it('a writer killed mid-turn: the lease expires, another takes over, a follower sees every event once, the old token is refused', async () => {
      const home = tempDir();
      const url = await backend.url();
      const base = { ATLAS_HOME: home, DATABASE_URL: url, TTL: '800' };
      const total = 30;
      const follower = replica({ ...base, MODE: 'follower', UNTIL: String(total) });
      const a = replica({ ...base, MODE: 'writer', REPLICA: 'a', COUNT: '1000', PAUSE: '20' });
      await a.saw((l) => l['claimed'] === 1);
      const b = replica({ ...base, MODE: 'writer', REPLICA: 'b', COUNT: '0' });
      await a.saw((l) => l['appended'] >= 10);
      a.child.kill('SIGKILL');
      await a.exited;
      const lastOfA = Math.max(...a.lines.filter((l) => l['appended']).map((l) => l['appended'] as number));
      // b's claim waited for the lease to expire; it then writes the rest of the turn.
      await b.exited;
      expect(b.lines[0]).toEqual({ replica: 'b', claimed: 2 });
      const c = replica({ ...base, MODE: 'writer', REPLICA: 'c', COUNT: String(total - lastOfA) });
      expect(await c.exited).toBe(0);
      expect(c.lines[0]).toEqual({ replica: 'c', claimed: 3 });

      const followed = (await follower.saw((l) => Array.isArray(l['ids'])))['ids'] as number[];
      expect(followed).toEqual(Array.from({ length: total }, (_, i) => i + 1));

      // The dead replica comes back with its token: it publishes nothing.
      const stale = replica({ ...base, MODE: 'stale', TOKEN: '1' });
      expect(await stale.exited).toBe(3);
      expect(stale.lines[0]).toMatchObject({ error: 'LeaseLostError' });

      // Last-Event-ID on any replica: a new follower from id 25 gets exactly the rest.
      const resumed = replica({ ...base, MODE: 'follower', AFTER: '25', UNTIL: String(total) });
      expect((await resumed.saw((l) => Array.isArray(l['ids'])))['ids']).toEqual([26, 27, 28, 29, 30]);

      const state = await openState({ home, url });
      try {
        const events = await state.eventsAfter('conversation:alice/c', 0);
        expect(events.map((e) => e.id)).toEqual(followed);
        expect(events.filter((e) => e.data['replica'] === 'a')).toHaveLength(lastOfA);
        expect((await state.getLease('conversation:alice/c'))?.holder).toBe('');
      } finally {
        await state.close();
      }
    }, 60_000);

    it('three processes appending at once to one log get every id once', async () => {
      const home = tempDir();
      const url = await backend.url();
      const appenders = ['x', 'y', 'z'].map((r) =>
        replica({ ATLAS_HOME: home, DATABASE_URL: url, MODE: 'appender', REPLICA: r, LOG: 'contended', COUNT: '100' }),
      );
      const codes = await Promise.all(appenders.map((r) => r.exited));
      expect(codes).toEqual([0, 0, 0]);
      const ids = appenders.flatMap((r) => r.lines[0]!['ids'] as number[]).sort((x, y) => x - y);
      expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      for (const r of appenders) {
        const own = r.lines[0]!['ids'] as number[];
        expect([...own].sort((x, y) => x - y)).toEqual(own);
      }
    }, 60_000);
  });
}

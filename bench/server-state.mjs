// The server state layer (src/server/state) on the embedded SQLite file and on a real PostgreSQL
// (started here in a temp folder by test/helpers/postgres.ts, with fsync on): open and migrate, event
// appends from 50 conversations at once (throughput, p50/p99 per append), appends fenced by a
// lease, and how long a follower in another connection takes to see an event (poll with cursor).
// Usage: node bench/server-state.mjs [conversations=50] [events per conversation=40]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importBundle } from './lib.mjs';

const CONVERSATIONS = Number(process.argv[2] ?? 50);
const EVENTS = Number(process.argv[3] ?? 40);
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-state-'));
const root = new URL('..', import.meta.url).pathname;
const require = createRequire(join(root, 'package.json'));
const entry = join(work, 'entry.ts');
writeFileSync(
  entry,
  `export { openState } from ${JSON.stringify(join(root, 'src/server/state/open.ts'))};\n` +
    `export { followLog } from ${JSON.stringify(join(root, 'src/server/state/follow.ts'))};\n` +
    `export { startPostgres, postgresSkipReason } from ${JSON.stringify(join(root, 'test/helpers/postgres.ts'))};\n`,
);
// The drivers are imported from node_modules by path: better-sqlite3's native addon cannot be bundled.
const linked = {
  name: 'linked',
  setup: (b) => b.onResolve({ filter: /^(better-sqlite3|pg)$/ }, (a) => ({ path: require.resolve(a.path), external: true })),
};
const lib = await importBundle(
  join(work, 'lib.mjs'),
  {
    entryPoints: [entry],
    plugins: [linked],
  },
  { require: true },
);

const sorted = (a) => [...a].sort((x, y) => x - y);
const pct = (s, p) => s[Math.min(s.length - 1, Math.floor(s.length * p))];
const ms = (n) => Number(n.toFixed(2));

async function measure(name, target) {
  let t = performance.now();
  const state = await lib.openState(target);
  const openMs = performance.now() - t;
  await state.close();
  t = performance.now();
  const again = await lib.openState(target);
  const reopenMs = performance.now() - t;
  await again.close();

  const state1 = await lib.openState({ ...target, poolSize: 10 });
  const other = await lib.openState({ ...target, poolSize: 2 });
  // 50 conversations, each appending its events one after the other (as a turn does), all at once.
  const latencies = [];
  t = performance.now();
  await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, c) => {
      for (let i = 0; i < EVENTS; i++) {
        const s = performance.now();
        await state1.appendEvent(`conversation:bench/c${c}`, 'delta', { text: 'x'.repeat(200), i });
        latencies.push(performance.now() - s);
      }
    }),
  );
  const wall = performance.now() - t;
  const l = sorted(latencies);

  // Fenced appends: one lease per conversation.
  const fenced = [];
  await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, c) => {
      const claim = await state1.claimLease(`lease-${c}`, 'bench', 60_000);
      for (let i = 0; i < 10; i++) {
        const s = performance.now();
        await state1.appendEvent(`conversation:bench/f${c}`, 'delta', { i }, { lease: `lease-${c}`, token: claim.token });
        fenced.push(performance.now() - s);
      }
    }),
  );

  // Follow latency: appended on one connection, seen by a follower polling on another every 20 ms.
  const seen = [];
  const sentAt = new Map();
  const follower = lib.followLog(other, 'follow', 0, (e) => seen.push(performance.now() - sentAt.get(e.id)), { intervalMs: 20 });
  for (let i = 0; i < 100; i++) {
    const e = await state1.appendEvent('follow', 'delta', { i });
    sentAt.set(e.id, performance.now());
    await new Promise((r) => setTimeout(r, 5));
  }
  while (seen.length < 100) await new Promise((r) => setTimeout(r, 10));
  follower.stop();
  await state1.close();
  await other.close();
  const f = sorted(fenced);
  const s = sorted(seen);
  return {
    backend: name,
    open_ms: ms(openMs),
    reopen_ms: ms(reopenMs),
    appends_per_s: Math.round(latencies.length / (wall / 1000)),
    append_p50_ms: ms(pct(l, 0.5)),
    append_p99_ms: ms(pct(l, 0.99)),
    fenced_p50_ms: ms(pct(f, 0.5)),
    fenced_p99_ms: ms(pct(f, 0.99)),
    follow_p50_ms: ms(pct(s, 0.5)),
    follow_p99_ms: ms(pct(s, 0.99)),
  };
}

const rows = [];
try {
  rows.push(await measure('sqlite', { home: join(work, 'home-sqlite'), url: '' }));
  if (lib.postgresSkipReason) console.error(`PostgreSQL skipped: ${lib.postgresSkipReason}`);
  else {
    const pg = await lib.startPostgres({ durable: true });
    try {
      rows.push(await measure('postgres', { home: join(work, 'home-pg'), url: await pg.createDatabase('bench') }));
    } finally {
      await pg.stop();
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(
  `${CONVERSATIONS} conversations × ${EVENTS} events, appended at once (a transaction each: counter, insert; fenced: + the lease row)`,
);
console.table(rows);

// `atlas serve` on its embedded state (SQLite) against one and three servers on one PostgreSQL
// (started here in a temp folder, fsync on): 50 conversations at once with a command agent, each
// turn sent to the next server in turn (so a conversation's turns move between servers), a fresh
// connection per turn. Prints turns per second, p50/p99 of the first SSE byte and of the whole
// turn, errors, and PostgreSQL transactions and statements per turn (pg_stat_database and
// pg_stat_statements; each statement, BEGIN and COMMIT included, is one round trip).
// Usage: node bench/server-cluster.mjs [conversations=50] [turns=2]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, pct, postgresTools, postTurn, sorted, startServer } from './cluster-lib.mjs';
import { concurrentTurns } from './lib.mjs';

const CONVERSATIONS = Number(process.argv[2] ?? 50);
const TURNS = Number(process.argv[3] ?? 2);
const AGENT = join(import.meta.dirname, 'server-agent.mjs');
const work = mkdtempSync(join(tmpdir(), 'atlas-bench-cluster-'));
const lib = await postgresTools(work);
const FLAGS = [
  '-c',
  'ai.agent=command',
  '-c',
  `ai.command=${process.execPath} ${AGENT}`,
  '-c',
  'server.max_streams_per_account=1000',
  '-c',
  'server.requests_per_second=0',
  '-c',
  'server.max_running_per_account=1000',
];

function turn(port, tok, conversation) {
  return new Promise((resolve, reject) => {
    const p0 = performance.now();
    postTurn(port, tok, conversation, 'bench', reject, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let text = '';
      let firstByte;
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        firstByte ??= performance.now() - p0;
        text += chunk;
      });
      res.on('end', () =>
        text.includes('event: usage') && text.includes('"ok":true')
          ? resolve({ firstByte, total: performance.now() - p0 })
          : reject(new Error('no ok usage event')),
      );
      res.on('error', reject);
    });
  });
}

/** Transactions and statements so far in the database of `url` (NaN without one). */
async function counters(url, show = false) {
  if (!url) return { transactions: NaN, statements: NaN };
  const client = new lib.pg.Client({ connectionString: url });
  await client.connect();
  await client.query('create extension if not exists pg_stat_statements');
  const t = await client.query('select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()');
  const s = await client.query(
    'select coalesce(sum(calls), 0) as n from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())',
  );
  // BENCH_STATEMENTS=1: which statements the round trips are, most called first.
  if (show && process.env.BENCH_STATEMENTS === '1') {
    const top = await client.query(
      "select calls, left(regexp_replace(query, E'\\\\s+', ' ', 'g'), 110) as query from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database()) order by calls desc limit 15",
    );
    console.table(top.rows);
  }
  await client.end();
  return { transactions: Number(t.rows[0].n), statements: Number(s.rows[0].n) };
}

async function run(label, replicas, url) {
  const homes = Array.from({ length: replicas }, (_, i) => join(work, `${label}-${i}`));
  const env = { ATLAS_DATABASE_URL: url };
  const tok = createToken(homes[0], env);
  const servers = await Promise.all(homes.map((h) => startServer(h, env, FLAGS)));
  try {
    const before = await counters(url);
    const firstBytes = [];
    const totals = [];
    const { errors, ms: wall } = await concurrentTurns(CONVERSATIONS, TURNS, async (i, k) => {
      const r = await turn(servers[(i + k) % replicas].port, tok, `${label}-${i}`);
      firstBytes.push(r.firstByte);
      totals.push(r.total);
    });
    // PostgreSQL's backends report their counters a moment after the fact.
    if (url) await new Promise((r) => setTimeout(r, 1_500));
    const after = await counters(url, true);
    const f = sorted(firstBytes);
    const t = sorted(totals);
    return {
      setup: label,
      turns_per_s: Number(((CONVERSATIONS * TURNS - errors) / (wall / 1000)).toFixed(1)),
      first_byte_p50_ms: Math.round(pct(f, 0.5)),
      first_byte_p99_ms: Math.round(pct(f, 0.99)),
      turn_p50_ms: Math.round(pct(t, 0.5)),
      turn_p99_ms: Math.round(pct(t, 0.99)),
      errors,
      db_transactions_per_turn: Number.isNaN(before.transactions)
        ? '-'
        : Number(((after.transactions - before.transactions) / (CONVERSATIONS * TURNS)).toFixed(1)),
      db_round_trips_per_turn: Number.isNaN(before.statements)
        ? '-'
        : Number(((after.statements - before.statements) / (CONVERSATIONS * TURNS)).toFixed(1)),
    };
  } finally {
    for (const s of servers) s.child.kill('SIGTERM');
  }
}

const rows = [];
let pg;
try {
  rows.push(await run('sqlite-1', 1, ''));
  if (lib.postgresSkipReason) console.error(`PostgreSQL skipped: ${lib.postgresSkipReason}`);
  else {
    pg = await lib.startPostgres({ durable: true, statements: true });
    rows.push(await run('postgres-1', 1, await pg.createDatabase('one')));
    rows.push(await run('postgres-3', 3, await pg.createDatabase('three')));
  }
} finally {
  await pg?.stop();
  rmSync(work, { recursive: true, force: true });
}
console.log(`${CONVERSATIONS} conversations × ${TURNS} turns at once, a command agent, each turn on the next server`);
console.table(rows);

// Opens the server state: PostgreSQL when a URL is given (server.database or ATLAS_DATABASE_URL),
// otherwise SQLite in $ATLAS_HOME/server/state.db. Kysely and the drivers are imported here, on
// demand, so a CLI command that never opens the state does not pay for loading them.
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Kysely } from 'kysely';
import { redactUrl } from '../../domain/redact-url.js';
import { retryWhile } from '../../domain/retry-while.js';
import type { Database } from './schema.js';
import type { ServerState, StateBackend } from './types.js';

export interface StateOptions {
  home: string;
  /** A postgres:// or postgresql:// URL; empty or undefined: the embedded SQLite file. */
  url?: string | undefined;
  /** Connections per process on PostgreSQL. */
  poolSize?: number;
  /** server.messages: dynamodb://TABLE[?endpoint=URL&region=NAME] puts the messages there ('' or undefined: with the rest). */
  messages?: string | undefined;
}

export function stateFilePath(home: string): string {
  return join(home, 'server', 'state.db');
}

/** server.database when set, else ATLAS_DATABASE_URL, else '' (the embedded SQLite file). */
export function databaseUrl(configured: string, env: NodeJS.ProcessEnv = process.env): string {
  return configured.trim() || env['ATLAS_DATABASE_URL']?.trim() || '';
}

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(?:ql)?:\/\//i.test(url);
}

/**
 * One handle per file in a process: better-sqlite3 is synchronous, so a second handle waiting on
 * the first one's write lock would block the very thread that has to finish that transaction.
 */
const sqliteHandles = new Map<string, { ready: Promise<Kysely<Database>>; refs: number }>();

interface Opened {
  db: Kysely<Database>;
  /** Closes this user's handle (the SQLite file only when its last user closes). */
  close: () => Promise<void>;
}

/** Compiled statements kept per SQL text, the least recently used dropped past this many. */
const STATEMENT_CACHE = 256;

/**
 * better-sqlite3 compiles SQL on every prepare(), and Kysely prepares each query afresh: a turn's
 * dozen queries are the same texts every time, so their compiled statements are kept (a tenth of
 * a busy server's main thread went to compiling). Safe because the driver runs a statement to the
 * end (all() or run()) before the next one starts: no statement is ever in use twice at once.
 */
export function keepingStatements(sqlite: import('better-sqlite3').Database): import('kysely').SqliteDatabase {
  const cache = new Map<string, import('better-sqlite3').Statement>();
  return {
    close: () => void sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement) cache.delete(sql);
      else {
        statement = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/** How long opening the file waits for the other processes on this home. */
const OPEN_WAIT_MS = 30_000;

/**
 * Runs `step`, again while SQLite answers BUSY: a process on a loaded machine may hold its lock
 * past busy_timeout (a replica starting while another migrates or recovers the WAL of one that was
 * killed), and a server that gives up there fails to start for nothing.
 */
export function whenNotBusy<T>(step: () => T, waitMs = OPEN_WAIT_MS): Promise<T> {
  return retryWhile(step, (error) => String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY'), {
    waitMs,
    firstMs: 25,
    maxMs: 500,
  });
}

async function createSqlite(path: string): Promise<Kysely<Database>> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Created 0600 before SQLite opens it: tokens' hashes and conversations are nobody else's.
  closeSync(openSync(path, 'a', 0o600));
  chmodSync(path, 0o600);
  const [{ Kysely: K, SqliteDialect }, { default: SQLite }, { migrate }] = await Promise.all([
    import('kysely'),
    import('better-sqlite3'),
    import('./migrations.js'),
  ]);
  const sqlite = new SQLite(path);
  // First: another process on this home (atlas serve token create beside a running server, or one
  // starting at the same moment) may hold a lock briefly, even while the journal mode is set.
  sqlite.pragma('busy_timeout = 5000');
  await whenNotBusy(() => sqlite.pragma('journal_mode = WAL'));
  // Each event is a transaction: in WAL mode NORMAL syncs at checkpoints, not at every commit, and
  // loses nothing when the process dies (only a power cut may take the last commits).
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  const db = new K<Database>({ dialect: new SqliteDialect({ database: keepingStatements(sqlite) }) });
  // Kysely takes no migration lock on SQLite: the migration runs under SQLite's own write lock, so
  // processes starting together on one home take turns and the later ones find nothing to do.
  await whenNotBusy(() => sqlite.exec('BEGIN IMMEDIATE'));
  try {
    await migrate(db, 'sqlite');
    sqlite.exec('COMMIT');
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    await db.destroy();
    throw error;
  }
  return db;
}

async function openSqlite(home: string): Promise<Opened> {
  const path = stateFilePath(home);
  let entry = sqliteHandles.get(path);
  if (!entry) {
    const created = { ready: createSqlite(path), refs: 0 };
    // A failed open is tried afresh by the next caller.
    created.ready.catch(() => sqliteHandles.delete(path));
    sqliteHandles.set(path, created);
    entry = created;
  }
  const held = entry;
  held.refs++;
  let db: Kysely<Database>;
  try {
    db = await held.ready;
  } catch (error) {
    held.refs--;
    throw error;
  }
  let closed = false;
  return {
    db,
    close: async () => {
      if (closed) return;
      closed = true;
      if (--held.refs > 0) return;
      sqliteHandles.delete(path);
      await db.destroy();
    },
  };
}

const IDLE_IN_TRANSACTION_MS = 5_000;
/**
 * Every query's deadline on the client (issue 37): a database that accepts connections but never
 * answers (stopped, partitioned) fails the request with 503 instead of holding it.
 */
const QUERY_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 5_000;

async function openPostgres(url: string, poolSize: number): Promise<Opened> {
  const [{ Kysely: K, PostgresDialect }, pg] = await Promise.all([import('kysely'), import('pg')]);
  // A server that stalls inside a transaction (SIGSTOP, a frozen VM, a long pause) would hold its
  // row locks, and every other server waiting on them would stall too: PostgreSQL aborts such a
  // transaction after 5 s (a healthy one lasts milliseconds), and the others go on.
  const pool = new pg.default.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  // A connection cut by the database (idle, or mid-query: that query fails) must not crash the
  // server with an unhandled 'error' event; the pool opens a new one for the next query.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new K<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, close: () => db.destroy() };
}

/** Opens and migrates the state; a database that cannot be reached is an error naming it (password redacted). */
export async function openState(options: StateOptions): Promise<ServerState> {
  const backend: StateBackend = isPostgresUrl(options.url) ? 'postgres' : 'sqlite';
  const location = backend === 'postgres' ? redactUrl(options.url!) : stateFilePath(options.home);
  let opened: Opened;
  try {
    if (backend === 'sqlite') opened = await openSqlite(options.home);
    else {
      opened = await openPostgres(options.url!, options.poolSize ?? 10);
      const { migrate } = await import('./migrations.js');
      await migrate(opened.db, backend).catch(async (error: unknown) => {
        await opened.close().catch(() => undefined);
        throw error;
      });
    }
  } catch (error) {
    const raw = (error as Error).message;
    const message = backend === 'postgres' ? raw.split(options.url!).join(location) : raw;
    throw new Error(`server state at ${location}: ${message}`, { cause: error });
  }
  let dynamo: import('./dynamo-messages.js').DynamoMessages | undefined;
  if (options.messages) {
    const { DynamoMessages, DYNAMO_URL_FORM, parseDynamoUrl } = await import('./dynamo-messages.js');
    const target = parseDynamoUrl(options.messages);
    try {
      if (!target) throw new Error(`server.messages must be ${DYNAMO_URL_FORM}, got "${options.messages}"`);
      dynamo = await DynamoMessages.open(target);
    } catch (error) {
      await opened.close();
      throw error;
    }
  }
  const { SqlState } = await import('./sql-state.js');
  return new SqlState(opened.db, backend, location, opened.close, dynamo);
}

// The statements every turn runs several times on SQLite, as fixed SQL texts: Kysely would build
// each one's query tree and compile it to the same text again on every call (about a tenth of the
// server's thread per turn went to that). Same statements as the Kysely queries they replace, run
// in the caller's transaction; PostgreSQL keeps the built queries (its statements differ).
import { CompiledQuery, type Kysely } from 'kysely';
import type { ConversationsTable, Database } from './schema.js';

const COUNTER =
  'insert into "event_counters" ("log", "last_id") values (?, ?) on conflict ("log") do update set "last_id" = event_counters.last_id + ? returning "last_id"';
const LEASE = 'select "token", "holder" from "leases" where "name" = ?';
const RELEASE = 'update "leases" set "holder" = ?, "expires_at" = ? where "name" = ? and "token" = ?';
const ACCOUNT = 'insert into "accounts" ("name", "created_at") values (?, ?) on conflict ("name") do nothing';
const EVENT_ROW = '(?, ?, ?, ?, ?)';
/** Rows per INSERT text kept (a batch of events is at most 256). */
const inserts = new Map<number, string>();

async function rows<R>(db: Kysely<Database>, text: string, parameters: unknown[]): Promise<R[]> {
  return (await db.executeQuery<R>(CompiledQuery.raw(text, parameters))).rows;
}

/** Adds `count` to the log's counter (made at `count` if new); the new last id. */
export async function bumpCounter(db: Kysely<Database>, log: string, count: number): Promise<number | bigint | string | undefined> {
  return (await rows<{ last_id: number | bigint | string }>(db, COUNTER, [log, count, count]))[0]?.last_id;
}

export async function leaseRow(
  db: Kysely<Database>,
  name: string,
): Promise<{ token: number | bigint | string; holder: string } | undefined> {
  return (await rows<{ token: number | bigint | string; holder: string }>(db, LEASE, [name]))[0];
}

export async function releaseLease(db: Kysely<Database>, name: string, token: number): Promise<void> {
  await rows(db, RELEASE, ['', 0, name, token]);
}

export async function insertEvents(
  db: Kysely<Database>,
  events: { log: string; id: number; type: string; at: string; data: string }[],
): Promise<void> {
  let text = inserts.get(events.length);
  if (!text) {
    text = `insert into "events" ("log", "id", "type", "at", "data") values ${Array.from({ length: events.length }, () => EVENT_ROW).join(', ')}`;
    if (events.length <= 256) inserts.set(events.length, text);
  }
  await rows(
    db,
    text,
    events.flatMap((e) => [e.log, e.id, e.type, e.at, e.data]),
  );
}

/** Conversation upsert texts by their columns (fromConversation's, the same every call). */
const upserts = new Map<string, { text: string; changing: (keyof ConversationsTable)[] }>();

/** The conversation's row, inserted or updated (all but its key and creation), and its account. */
export async function upsertConversation(db: Kysely<Database>, row: ConversationsTable, accountCreatedAt: string): Promise<void> {
  await rows(db, ACCOUNT, [row.account, accountCreatedAt]);
  // Column names from the row's own keys (rows.ts), never from a request.
  const columns = Object.keys(row) as (keyof ConversationsTable)[];
  const shape = columns.join(',');
  let upsert = upserts.get(shape);
  if (!upsert) {
    const changing = columns.filter((c) => c !== 'account' && c !== 'id' && c !== 'created_at');
    const text =
      `insert into "conversations" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map(() => '?').join(', ')}) ` +
      `on conflict ("account", "id") do update set ${changing.map((c) => `"${c}" = ?`).join(', ')}`;
    upsert = { text, changing };
    upserts.set(shape, upsert);
  }
  await rows(db, upsert.text, [...columns.map((c) => row[c]), ...upsert.changing.map((c) => row[c])]);
}

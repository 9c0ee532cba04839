// Event logs and leases in SQL. An event's id comes from a per-log counter row, incremented in the
// transaction that inserts the event: two replicas appending at once get consecutive ids, never the
// same one, and a rolled-back append uses none. A lease's token increases on every claim, and an
// append fenced with a token is refused once another holder has claimed the lease.

import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { toTimestamp } from '../../domain/time.js';
import { num, toEvent, toLease } from './rows.js';
import type { Database } from './schema.js';
import { SqlRecords } from './sql-records.js';
import { bumpCounter, insertEvents, leaseRow, releaseLease } from './sqlite-hot.js';
import type { ConversationRow, CopyTo, EventRow, Fence, LeaseClaim, LeaseRow, StoredMessage } from './types.js';
import { LeaseLostError } from './types.js';

const MAX_EVENTS = 10_000;
const IMPORT_BATCH = 500;

export class SqlEvents extends SqlRecords {
  async appendEvent(log: string, type: string, data: Record<string, unknown>, fence?: Fence, copy?: CopyTo): Promise<EventRow> {
    if (this.backend === 'postgres') {
      const e = await this.appendOneStatement(log, type, data, fence);
      return copy ? (await this.withCopies([e], copy, (copies) => this.appendEvents(copy.log, copies)))[0]! : e;
    }
    return this.db.transaction().execute(async (trx) => {
      const [e] = await this.appendCopied(trx, log, [{ type, data }], fence, false, copy);
      return e!;
    });
  }

  async appendEvents(
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence?: Fence,
    copy?: CopyTo,
  ): Promise<EventRow[]> {
    if (events.length === 1) return [await this.appendEvent(log, events[0]!.type, events[0]!.data, fence, copy)];
    return this.db.transaction().execute((trx) => this.appendCopied(trx, log, events, fence, false, copy));
  }

  async startTurn(
    record: ConversationRow,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence?: Fence,
    copy?: CopyTo,
  ): Promise<EventRow[]> {
    // PostgreSQL: a transaction would add round trips (begin, the lease's lock, commit) to two
    // statements that need none; SQLite: one commit instead of two.
    if (this.backend === 'postgres') {
      await this.putConversation(record);
      return this.appendEvents(log, events, fence, copy);
    }
    return this.db.transaction().execute(async (trx) => {
      await this.putConversationIn(trx, record);
      return this.appendCopied(trx, log, events, fence, false, copy);
    });
  }

  async finishTurn(
    record: ConversationRow | undefined,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence: Fence,
    messages: StoredMessage[] = [],
    copy?: CopyTo,
  ): Promise<EventRow[]> {
    return this.db.transaction().execute(async (trx) => {
      const stored = await this.appendCopied(trx, log, events, fence, true, copy);
      await this.putMessagesIn(trx, messages);
      if (record) await this.putConversationIn(trx, record);
      if (this.backend === 'sqlite') await releaseLease(trx, fence.lease, fence.token);
      else
        await trx
          .updateTable('leases')
          .set({ holder: '', expires_at: 0 })
          .where('name', '=', fence.lease)
          .where('token', '=', fence.token)
          .execute();
      return stored;
    });
  }

  /** appendIn, then the events' copies (CopyTo) in the same transaction: one commit for both logs. */
  private async appendCopied(
    trx: Transaction<Database>,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence: Fence | undefined,
    releasing: boolean,
    copy: CopyTo | undefined,
  ): Promise<EventRow[]> {
    const stored = await this.appendIn(trx, log, events, fence, releasing);
    return copy ? this.withCopies(stored, copy, (copies) => this.appendIn(trx, copy.log, copies, undefined, false)) : stored;
  }

  /** The stored events, each with its copy as `store` appended it to copy.log. */
  private async withCopies(
    stored: EventRow[],
    copy: CopyTo,
    store: (copies: { type: string; data: Record<string, unknown> }[]) => Promise<EventRow[]>,
  ): Promise<EventRow[]> {
    const copies = await store(stored.map((e) => ({ type: e.type, data: { ...e.data, source: { ...copy.source, event_id: e.id } } })));
    return stored.map((e, i) => ({ ...e, copy: copies[i]! }));
  }

  /**
   * One event on PostgreSQL in one statement (one round trip instead of four: begin, counter,
   * insert, commit). The lease row is share-locked first, as appendIn does there, so a claim
   * either waits for this append or this append finds the claim's token and stores nothing (the
   * counter moves only when the event is stored: a refused append uses no id).
   */
  private async appendOneStatement(log: string, type: string, data: Record<string, unknown>, fence: Fence | undefined): Promise<EventRow> {
    const at = toTimestamp(new Date());
    const text = JSON.stringify(data);
    const counter = fence
      ? sql`with fence as (select 1 from leases where name = ${fence.lease} and token = ${fence.token} and holder <> '' for share),
          counter as (insert into event_counters (log, last_id) select ${log}, 1 where exists (select 1 from fence)
            on conflict (log) do update set last_id = event_counters.last_id + 1 returning last_id)`
      : sql`with counter as (insert into event_counters (log, last_id) values (${log}, 1)
            on conflict (log) do update set last_id = event_counters.last_id + 1 returning last_id)`;
    const { rows } = await sql<{
      id: string | number;
    }>`${counter} insert into events (log, id, type, at, data) select ${log}, last_id, ${type}, ${at}, ${text} from counter returning id`.execute(
      this.db,
    );
    if (!rows[0]) throw new LeaseLostError(fence!.lease, fence!.token);
    return { id: num(rows[0].id, 'events', 'id'), type, at, data };
  }

  /**
   * Events appended in the caller's transaction. With a fence, the lease row is read under a
   * share lock (an update lock when this transaction gives the lease back), so a claim either
   * waits for this commit or this append sees the claim's new token. On SQLite the counter comes
   * first: its write lock is taken at once (SQLite never upgrades a read to a write). On
   * PostgreSQL the lease comes first, in the same order as appendOneStatement, so the two never
   * wait for each other's row.
   */
  private async appendIn(
    trx: Transaction<Database>,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence: Fence | undefined,
    releasing: boolean,
  ): Promise<EventRow[]> {
    const at = toTimestamp(new Date());
    const postgres = this.backend === 'postgres';
    if (fence && postgres) await this.checkFence(trx, fence, releasing);
    const lastId = postgres
      ? (
          await trx
            .insertInto('event_counters')
            .values({ log, last_id: events.length })
            .onConflict((oc) => oc.column('log').doUpdateSet({ last_id: sql`event_counters.last_id + ${events.length}` }))
            .returning('last_id')
            .executeTakeFirstOrThrow()
        ).last_id
      : await bumpCounter(trx, log, events.length);
    if (fence && !postgres) await this.checkFence(trx, fence, releasing);
    const last = num(lastId, 'event_counters', 'last_id');
    // Only the fields of an event: a caller's object may carry more (a waiting append's resolve).
    const stored = events.map((e, i) => ({ id: last - events.length + 1 + i, type: e.type, at, data: e.data }));
    const rows = stored.map((e) => ({ log, id: e.id, type: e.type, at, data: JSON.stringify(e.data) }));
    if (rows.length > 0) await (postgres ? trx.insertInto('events').values(rows).execute() : insertEvents(trx, rows));
    return stored;
  }

  private async checkFence(trx: Transaction<Database>, fence: Fence, releasing: boolean): Promise<void> {
    const q = () => trx.selectFrom('leases').select(['token', 'holder']).where('name', '=', fence.lease);
    const lease =
      this.backend === 'sqlite'
        ? await leaseRow(trx, fence.lease)
        : await (releasing ? q().forUpdate() : q().forShare()).executeTakeFirst();
    if (!lease || lease.holder === '' || num(lease.token, 'leases', 'token') !== fence.token)
      throw new LeaseLostError(fence.lease, fence.token);
  }

  async eventsAfter(log: string, afterId: number, limit = MAX_EVENTS): Promise<EventRow[]> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where('log', '=', log)
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }

  async lastEventId(log: string): Promise<number> {
    const row = await this.db.selectFrom('event_counters').select('last_id').where('log', '=', log).executeTakeFirst();
    return row ? num(row.last_id, 'event_counters', 'last_id') : 0;
  }

  async dropEvents(log: string): Promise<void> {
    await this.db.deleteFrom('events').where('log', '=', log).execute();
  }

  async importEvents(log: string, events: EventRow[], floor = 0): Promise<number> {
    const top = Math.max(floor, ...events.map((e) => e.id));
    return this.db.transaction().execute(async (trx) => {
      let added = 0;
      for (let i = 0; i < events.length; i += IMPORT_BATCH) {
        const rows = events
          .slice(i, i + IMPORT_BATCH)
          .map((e) => ({ log, id: e.id, type: e.type, at: e.at, data: JSON.stringify(e.data) }));
        const r = await trx
          .insertInto('events')
          .values(rows)
          .onConflict((oc) => oc.columns(['log', 'id']).doNothing())
          .executeTakeFirst();
        added += Number(r.numInsertedOrUpdatedRows ?? 0n);
      }
      if (top > 0) {
        await trx
          .insertInto('event_counters')
          .values({ log, last_id: top })
          .onConflict((oc) =>
            oc
              .column('log')
              .doUpdateSet({ last_id: sql`case when event_counters.last_id > ${top} then event_counters.last_id else ${top} end` }),
          )
          .execute();
      }
      return added;
    });
  }

  async logs(): Promise<{ log: string; last_id: number }[]> {
    const rows = await this.db.selectFrom('event_counters').selectAll().orderBy('log').execute();
    return rows.map((r) => ({ log: r.log, last_id: num(r.last_id, 'event_counters', 'last_id') }));
  }

  async claimLease(name: string, holder: string, ttlMs: number, now = Date.now()): Promise<LeaseClaim> {
    const expires = now + ttlMs;
    const created = await this.db
      .insertInto('leases')
      .values({ name, holder, token: 1, expires_at: expires, heartbeat_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .returning('token')
      .executeTakeFirst();
    if (created) return { ok: true, token: num(created.token, 'leases', 'token') };
    // One statement decides: of replicas racing for a free or expired lease, exactly one matches.
    const taken = await this.db
      .updateTable('leases')
      .set({ holder, token: sql`token + 1`, expires_at: expires, heartbeat_at: now })
      .where('name', '=', name)
      .where((eb) => eb.or([eb('holder', '=', ''), eb('expires_at', '<=', now)]))
      .returning('token')
      .executeTakeFirst();
    if (taken) return { ok: true, token: num(taken.token, 'leases', 'token') };
    const current = await this.getLease(name);
    // Released and claimed again between the two statements: the caller may simply retry.
    if (!current) return this.claimLease(name, holder, ttlMs, now);
    return { ok: false, holder: current };
  }

  async renewLease(name: string, holder: string, token: number, ttlMs: number, now = Date.now()): Promise<boolean> {
    const r = await this.db
      .updateTable('leases')
      .set({ expires_at: now + ttlMs, heartbeat_at: now })
      .where('name', '=', name)
      .where('holder', '=', holder)
      .where('token', '=', token)
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  async releaseLease(name: string, token: number): Promise<void> {
    // Kept, not deleted: the next claim's token continues from this one.
    await this.db.updateTable('leases').set({ holder: '', expires_at: 0 }).where('name', '=', name).where('token', '=', token).execute();
  }

  async breakLease(name: string, holder: string): Promise<boolean> {
    const r = await this.db
      .updateTable('leases')
      .set({ holder: '', expires_at: 0 })
      .where('name', '=', name)
      .where('holder', '=', holder)
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  async getLease(name: string): Promise<LeaseRow | undefined> {
    const row = await this.db.selectFrom('leases').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? toLease(row) : undefined;
  }

  async expiredLeases(now = Date.now()): Promise<LeaseRow[]> {
    const rows = await this.db
      .selectFrom('leases')
      .selectAll()
      .where('holder', '<>', '')
      .where('expires_at', '<=', now)
      .orderBy('name')
      .execute();
    return rows.map(toLease);
  }
}

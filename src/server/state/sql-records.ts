// Accounts, tokens, conversations, messages and the task index in SQL: one set of Kysely queries
// for SQLite and PostgreSQL (only the messages' identity column differs, in the migration).
import type { Kysely } from 'kysely';
import { toTimestamp } from '../../domain/time.js';
import { fromConversation, toConversation, toMessage, toTask, toToken } from './rows.js';
import type { Database } from './schema.js';
import { upsertConversation } from './sqlite-hot.js';
import type { AccountRecord, ConversationRow, StateBackend, StoredMessage, TaskIndexRow, TokenRow } from './types.js';

/** Rows per INSERT when many messages go in at once (PostgreSQL allows 65535 parameters). */
const MESSAGE_BATCH = 500;

export class SqlRecords {
  constructor(
    protected readonly db: Kysely<Database>,
    readonly backend: StateBackend,
  ) {}

  async ensureAccount(name: string, now = new Date()): Promise<void> {
    await this.db
      .insertInto('accounts')
      .values({ name, created_at: toTimestamp(now) })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.db.selectFrom('accounts').selectAll().orderBy('name').execute();
  }

  async addToken(row: TokenRow): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('accounts')
        .values({ name: row.account, created_at: row.created_at })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const r = await trx
        .insertInto('tokens')
        .values({ ...row, read_only: row.read_only ? 1 : 0, revoked_at: row.revoked_at ?? null })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
    });
  }

  async revokeToken(id: string, now = new Date()): Promise<TokenRow | undefined> {
    const revoked = await this.db
      .updateTable('tokens')
      .set({ revoked_at: toTimestamp(now) })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    return revoked ? toToken(revoked) : undefined;
  }

  async listTokens(): Promise<TokenRow[]> {
    return (
      await this.db.selectFrom('tokens').selectAll().where('revoked_at', 'is', null).orderBy('created_at').orderBy('id').execute()
    ).map(toToken);
  }

  async allTokens(): Promise<TokenRow[]> {
    return (await this.db.selectFrom('tokens').selectAll().orderBy('created_at').orderBy('id').execute()).map(toToken);
  }

  async tokenByHash(sha256: string): Promise<TokenRow | undefined> {
    const row = await this.db
      .selectFrom('tokens')
      .selectAll()
      .where('sha256', '=', sha256)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return row ? toToken(row) : undefined;
  }

  async putConversation(c: ConversationRow): Promise<void> {
    // One statement on PostgreSQL needs no transaction around it.
    if (this.backend === 'postgres') await this.putConversationIn(this.db, c);
    else await this.db.transaction().execute((trx) => this.putConversationIn(trx, c));
  }

  /**
   * The record and its account, in the caller's transaction (`db` itself for one statement). On
   * PostgreSQL one statement, one round trip: the account's row in a data-modifying WITH, which
   * PostgreSQL runs whether or not the rest reads it.
   */
  protected async putConversationIn(db: Kysely<Database>, c: ConversationRow): Promise<void> {
    const row = fromConversation(c);
    if (this.backend === 'sqlite') return upsertConversation(db, row, c.created_at);
    const { account: _a, id: _i, created_at: _c, ...changing } = row;
    await db
      .with('account', (w) =>
        w
          .insertInto('accounts')
          .values({ name: c.account, created_at: c.created_at })
          .onConflict((oc) => oc.column('name').doNothing()),
      )
      .insertInto('conversations')
      .values(row)
      .onConflict((oc) => oc.columns(['account', 'id']).doUpdateSet(changing))
      .execute();
  }

  async getConversation(account: string, id: string): Promise<ConversationRow | undefined> {
    const row = await this.db
      .selectFrom('conversations')
      .selectAll()
      .where('account', '=', account)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toConversation(row) : undefined;
  }

  async listConversations(account: string): Promise<ConversationRow[]> {
    const rows = await this.db
      .selectFrom('conversations')
      .selectAll()
      .where('account', '=', account)
      .orderBy('updated_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map(toConversation);
  }

  async removeConversation(account: string, id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('messages').where('account', '=', account).where('conversation_id', '=', id).execute();
      await trx.deleteFrom('conversations').where('account', '=', account).where('id', '=', id).execute();
    });
  }

  async putMessages(messages: StoredMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.db.transaction().execute((trx) => this.putMessagesIn(trx, messages));
  }

  /** Messages in the caller's transaction. */
  protected async putMessagesIn(trx: Kysely<Database>, messages: StoredMessage[]): Promise<void> {
    for (let i = 0; i < messages.length; i += MESSAGE_BATCH) {
      const rows = messages.slice(i, i + MESSAGE_BATCH).map((m) => ({
        account: m.account,
        conversation_id: m.conversation_id,
        key: m.key,
        turn: m.turn,
        role: m.role,
        body: m.body,
        timestamp: m.timestamp,
        tokens: m.tokens,
        tool_calls: JSON.stringify(m.tool_calls),
      }));
      await trx
        .insertInto('messages')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['account', 'conversation_id', 'key']).doUpdateSet((eb) => ({
            turn: eb.ref('excluded.turn'),
            role: eb.ref('excluded.role'),
            body: eb.ref('excluded.body'),
            timestamp: eb.ref('excluded.timestamp'),
            tokens: eb.ref('excluded.tokens'),
            tool_calls: eb.ref('excluded.tool_calls'),
          })),
        )
        .execute();
    }
  }

  async listMessages(account: string, conversationId: string, options: { limit?: number; turn?: number } = {}): Promise<StoredMessage[]> {
    let q = this.db.selectFrom('messages').selectAll().where('account', '=', account).where('conversation_id', '=', conversationId);
    if (options.turn !== undefined) q = q.where('turn', '=', options.turn);
    q = q.orderBy('turn').orderBy('seq');
    if (options.limit !== undefined) q = q.limit(options.limit);
    return (await q.execute()).map(toMessage);
  }

  async putTask(row: TaskIndexRow): Promise<void> {
    const { task_id: _t, ...changing } = row;
    await this.db
      .insertInto('tasks')
      .values(row)
      .onConflict((oc) => oc.column('task_id').doUpdateSet(changing))
      .execute();
  }

  async getTask(taskId: string): Promise<TaskIndexRow | undefined> {
    const row = await this.db.selectFrom('tasks').selectAll().where('task_id', '=', taskId).executeTakeFirst();
    return row ? toTask(row) : undefined;
  }

  async listTasks(account: string): Promise<TaskIndexRow[]> {
    return (
      await this.db
        .selectFrom('tasks')
        .selectAll()
        .where('account', '=', account)
        .orderBy('created_at', 'desc')
        .orderBy('task_id')
        .execute()
    ).map(toTask);
  }

  async hasMarker(name: string): Promise<boolean> {
    return (await this.db.selectFrom('markers').select('name').where('name', '=', name).executeTakeFirst()) !== undefined;
  }

  async setMarker(name: string, now = new Date()): Promise<void> {
    await this.db
      .insertInto('markers')
      .values({ name, at: toTimestamp(now) })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
  }
}

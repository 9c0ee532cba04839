// The ServerState over Kysely: records (sql-records.ts) and events and leases (sql-events.ts);
// with server.messages set, the messages in DynamoDB instead (dynamo-messages.ts).
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { DynamoMessages } from './dynamo-messages.js';
import type { Database } from './schema.js';
import { SqlEvents } from './sql-events.js';
import type { ServerState, StateBackend, StoredMessage } from './types.js';

export class SqlState extends SqlEvents implements ServerState {
  constructor(
    db: Kysely<Database>,
    backend: StateBackend,
    readonly location: string,
    private readonly closeHandle: () => Promise<void>,
    private readonly dynamo?: DynamoMessages,
  ) {
    super(db, backend);
  }

  override async putMessages(messages: StoredMessage[]): Promise<void> {
    return this.dynamo ? this.dynamo.putMessages(messages) : super.putMessages(messages);
  }

  get messagesInDatabase(): boolean {
    return this.dynamo === undefined;
  }

  override async listMessages(
    account: string,
    conversationId: string,
    options: { limit?: number; turn?: number } = {},
  ): Promise<StoredMessage[]> {
    return this.dynamo ? this.dynamo.listMessages(account, conversationId, options) : super.listMessages(account, conversationId, options);
  }

  override async removeConversation(account: string, id: string): Promise<void> {
    await this.dynamo?.removeConversation(account, id);
    await super.removeConversation(account, id);
  }

  async pingDatabase(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async pingMessages(): Promise<void> {
    await this.dynamo?.ping();
  }

  async close(): Promise<void> {
    this.dynamo?.close();
    await this.closeHandle();
  }
}

// The ServerState over Kysely: records (sql-records.ts) and events and leases (sql-events.ts).
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { SqlEvents } from './sql-events.js';
import type { ServerState, StateBackend } from './types.js';

export class SqlState extends SqlEvents implements ServerState {
  constructor(
    db: Kysely<Database>,
    backend: StateBackend,
    readonly location: string,
    private readonly closeHandle: () => Promise<void>,
  ) {
    super(db, backend);
  }

  async close(): Promise<void> {
    await this.closeHandle();
  }
}

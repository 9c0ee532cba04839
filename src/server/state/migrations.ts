// Versioned migrations, in code (nothing read from disk at run time), applied at start-up by
// Kysely's Migrator. On PostgreSQL the Migrator holds a session advisory lock (pg_advisory_lock)
// while it migrates, so replicas starting together apply each migration once; SQLite serialises
// writers itself. A migration, once released, never changes: a new one is added after it.
import type { Kysely, Migration, MigrationProvider, MigrationResultSet } from 'kysely';
import { Migrator, sql } from 'kysely';
import type { Database } from './schema.js';
import type { StateBackend } from './types.js';

function initial(backend: StateBackend): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('accounts')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account', 'text', (c) => c.notNull().references('accounts.name'))
        .addColumn('sha256', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('read_only', 'integer', (c) => c.notNull().defaultTo(0))
        // Revoked tokens stay as rows: an import of an old tokens.json never brings one back.
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createTable('conversations')
        .addColumn('account', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text')
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('sandbox_id', 'text')
        .addColumn('session_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('turns', 'integer', (c) => c.notNull())
        .addColumn('last_turn', 'text')
        .addColumn('messages_exchanged', 'integer', (c) => c.notNull())
        .addColumn('total_input_tokens', 'bigint', (c) => c.notNull())
        .addColumn('total_output_tokens', 'bigint')
        .addColumn('cache_read_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cache_creation_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cost_usd', 'double precision')
        .addColumn('partial', 'integer', (c) => c.notNull())
        .addColumn('models', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('conversations_pk', ['account', 'id'])
        .execute();
      await db.schema.createIndex('conversations_by_update').on('conversations').columns(['account', 'updated_at']).execute();
      // The insertion order of messages: an identity column, spelled per dialect.
      await db.schema
        .createTable('messages')
        .addColumn('seq', backend === 'postgres' ? 'bigserial' : 'integer', (c) =>
          backend === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('account', 'text', (c) => c.notNull())
        .addColumn('conversation_id', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('turn', 'integer', (c) => c.notNull())
        .addColumn('role', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('timestamp', 'bigint', (c) => c.notNull())
        .addColumn('tokens', 'bigint', (c) => c.notNull())
        .addColumn('tool_calls', 'text', (c) => c.notNull())
        .addUniqueConstraint('messages_key', ['account', 'conversation_id', 'key'])
        .execute();
      await db.schema.createIndex('messages_by_turn').on('messages').columns(['account', 'conversation_id', 'turn', 'seq']).execute();
      await db.schema
        .createTable('event_counters')
        .addColumn('log', 'text', (c) => c.primaryKey())
        .addColumn('last_id', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('events')
        .addColumn('log', 'text', (c) => c.notNull())
        .addColumn('id', 'bigint', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('events_pk', ['log', 'id'])
        .execute();
      await db.schema
        .createTable('tasks')
        .addColumn('task_id', 'text', (c) => c.primaryKey())
        .addColumn('account', 'text', (c) => c.notNull())
        .addColumn('workspace', 'text', (c) => c.notNull())
        .addColumn('dir', 'text', (c) => c.notNull())
        .addColumn('repo', 'text', (c) => c.notNull())
        .addColumn('template', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tasks_by_account').on('tasks').columns(['account', 'created_at']).execute();
      await db.schema
        .createTable('leases')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('token', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
        .execute();
      await sql`create index leases_by_expiry on leases (expires_at)`.execute(db);
    },
  };
}

/** Things done once per state, such as adopting an older home's files: their names, and when. */
const markers: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('markers')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('at', 'text', (c) => c.notNull())
      .execute();
  },
};

/** Which machine a task is on: another server answers its requests with where to send them. */
const taskHost: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable('tasks')
      .addColumn('host', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
  },
};

export function migrationsFor(backend: StateBackend): Record<string, Migration> {
  return { '0001_initial': initial(backend), '0002_markers': markers, '0003_task_host': taskHost };
}

class CodeMigrations implements MigrationProvider {
  constructor(private readonly backend: StateBackend) {}
  getMigrations(): Promise<Record<string, Migration>> {
    return Promise.resolve(migrationsFor(this.backend));
  }
}

export const MIGRATION_TABLE = 'atlas_migrations';

/** Applies every migration not yet applied; throws with the failing migration's name. */
export async function migrate(db: Kysely<Database>, backend: StateBackend): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: new CodeMigrations(backend),
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: `${MIGRATION_TABLE}_lock`,
  });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(
      `cannot migrate the server state${failed ? ` (${failed})` : ''}: ${(result.error as Error).message ?? String(result.error)}`,
      { cause: result.error },
    );
  }
  return result;
}

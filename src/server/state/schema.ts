// The tables as Kysely sees them. Booleans are integers (0/1) and JSON is text on both backends, so
// one query works on SQLite and PostgreSQL; bigint columns come back from `pg` as strings, which
// the row readers turn into numbers.
import type { Generated } from 'kysely';
import type { ConversationRow, TaskIndexRow } from './types.js';

type Int = number | string;

export interface AccountsTable {
  name: string;
  created_at: string;
}

export interface TokensTable {
  id: string;
  account: string;
  sha256: string;
  created_at: string;
  expires_at: string | null;
  read_only: number;
  revoked_at: string | null;
}

/** The record's own columns as they are; its last turn as JSON and its stats spread into columns. */
export interface ConversationsTable extends Omit<ConversationRow, 'last_turn' | 'stats'> {
  last_turn: string | null;
  messages_exchanged: number;
  total_input_tokens: Int;
  total_output_tokens: Int | null;
  cache_read_tokens: Int;
  cache_creation_tokens: Int;
  cost_usd: number | null;
  partial: number;
  models: string;
}

export interface MessagesTable {
  seq: Generated<Int>;
  account: string;
  conversation_id: string;
  key: string;
  turn: number;
  role: number;
  body: string;
  timestamp: Int;
  tokens: Int;
  tool_calls: string;
}

export interface EventCountersTable {
  log: string;
  last_id: Int;
}

export interface EventsTable {
  log: string;
  id: Int;
  type: string;
  at: string;
  data: string;
}

export type TasksTable = TaskIndexRow;

export interface LeasesTable {
  name: string;
  holder: string;
  token: Int;
  expires_at: Int;
  heartbeat_at: Int;
}

export interface MarkersTable {
  name: string;
  at: string;
}

export interface Database {
  accounts: AccountsTable;
  tokens: TokensTable;
  conversations: ConversationsTable;
  messages: MessagesTable;
  event_counters: EventCountersTable;
  events: EventsTable;
  tasks: TasksTable;
  leases: LeasesTable;
  markers: MarkersTable;
}

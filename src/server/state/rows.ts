// Rows read back from either database become records only after a check: a damaged or foreign
// row is an error naming the table, never a half-typed value passed on.
import type { Selectable } from 'kysely';
import type { ConversationStats, MessageRole, ModelUsageRow, ToolCall } from '../../domain/conversation.js';
import type { ConversationsTable, EventsTable, LeasesTable, MessagesTable, TasksTable, TokensTable } from './schema.js';
import type { ConversationRow, EventRow, LeaseRow, StoredMessage, TaskIndexRow, TokenRow, TurnRow } from './types.js';

export class StateDataError extends Error {
  constructor(table: string, detail: string) {
    super(`server state: a row of ${table} is not valid (${detail})`);
    this.name = 'StateDataError';
  }
}

/** bigint columns arrive as strings from pg and as numbers from SQLite. */
export function num(value: unknown, table: string, column: string): number {
  const n = typeof value === 'string' ? Number(value) : typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new StateDataError(table, `${column} is not a number`);
  return n;
}

function json(text: unknown, table: string, column: string): unknown {
  if (typeof text !== 'string') throw new StateDataError(table, `${column} is not text`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StateDataError(table, `${column} is not JSON`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(value: unknown, table: string, column: string): string {
  if (typeof value !== 'string') throw new StateDataError(table, `${column} is not text`);
  return value;
}

export function toToken(r: TokensTable): TokenRow {
  const sha256 = str(r.sha256, 'tokens', 'sha256');
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new StateDataError('tokens', 'sha256 is not a hex SHA-256');
  return {
    id: str(r.id, 'tokens', 'id'),
    account: str(r.account, 'tokens', 'account'),
    sha256,
    created_at: str(r.created_at, 'tokens', 'created_at'),
    expires_at: r.expires_at ?? null,
    read_only: num(r.read_only, 'tokens', 'read_only') === 1,
    revoked_at: r.revoked_at ?? null,
  };
}

function toTurn(text: string | null): TurnRow | null {
  if (text === null) return null;
  const t = json(text, 'conversations', 'last_turn');
  if (!isObject(t) || typeof t['turn'] !== 'number' || typeof t['started_at'] !== 'string')
    throw new StateDataError('conversations', 'last_turn is not a turn');
  return t as unknown as TurnRow;
}

export function toConversation(r: ConversationsTable): ConversationRow {
  const models = json(r.models, 'conversations', 'models');
  if (!Array.isArray(models) || !models.every(isObject)) throw new StateDataError('conversations', 'models is not a list');
  const stats: ConversationStats = {
    messages_exchanged: num(r.messages_exchanged, 'conversations', 'messages_exchanged'),
    total_input_tokens: num(r.total_input_tokens, 'conversations', 'total_input_tokens'),
    total_output_tokens: r.total_output_tokens === null ? null : num(r.total_output_tokens, 'conversations', 'total_output_tokens'),
    total_cache_tokens:
      num(r.cache_read_tokens, 'conversations', 'cache_read_tokens') +
      num(r.cache_creation_tokens, 'conversations', 'cache_creation_tokens'),
    cache_read_tokens: num(r.cache_read_tokens, 'conversations', 'cache_read_tokens'),
    cache_creation_tokens: num(r.cache_creation_tokens, 'conversations', 'cache_creation_tokens'),
    cost_usd: r.cost_usd === null ? null : num(r.cost_usd, 'conversations', 'cost_usd'),
    partial: num(r.partial, 'conversations', 'partial') === 1,
    models: models as unknown as ModelUsageRow[],
  };
  return {
    id: str(r.id, 'conversations', 'id'),
    account: str(r.account, 'conversations', 'account'),
    agent_id: r.agent_id ?? null,
    provider: str(r.provider, 'conversations', 'provider'),
    sandbox_id: r.sandbox_id ?? null,
    session_id: str(r.session_id, 'conversations', 'session_id'),
    created_at: str(r.created_at, 'conversations', 'created_at'),
    updated_at: str(r.updated_at, 'conversations', 'updated_at'),
    status: str(r.status, 'conversations', 'status'),
    turns: num(r.turns, 'conversations', 'turns'),
    last_turn: toTurn(r.last_turn),
    stats,
  };
}

export function fromConversation(c: ConversationRow): ConversationsTable {
  return {
    account: c.account,
    id: c.id,
    agent_id: c.agent_id,
    provider: c.provider,
    sandbox_id: c.sandbox_id,
    session_id: c.session_id,
    created_at: c.created_at,
    updated_at: c.updated_at,
    status: c.status,
    turns: c.turns,
    last_turn: c.last_turn === null ? null : JSON.stringify(c.last_turn),
    messages_exchanged: c.stats.messages_exchanged,
    total_input_tokens: c.stats.total_input_tokens,
    total_output_tokens: c.stats.total_output_tokens,
    cache_read_tokens: c.stats.cache_read_tokens,
    cache_creation_tokens: c.stats.cache_creation_tokens,
    cost_usd: c.stats.cost_usd,
    partial: c.stats.partial ? 1 : 0,
    models: JSON.stringify(c.stats.models),
  };
}

export function toMessage(r: Selectable<MessagesTable>): StoredMessage {
  const calls = json(r.tool_calls, 'messages', 'tool_calls');
  if (!Array.isArray(calls) || !calls.every((c) => isObject(c) && typeof c['id'] === 'string' && typeof c['name'] === 'string')) {
    throw new StateDataError('messages', 'tool_calls is not a list of tool calls');
  }
  return {
    account: str(r.account, 'messages', 'account'),
    conversation_id: str(r.conversation_id, 'messages', 'conversation_id'),
    key: str(r.key, 'messages', 'key'),
    turn: num(r.turn, 'messages', 'turn'),
    role: toRole(r.role),
    body: str(r.body, 'messages', 'body'),
    timestamp: num(r.timestamp, 'messages', 'timestamp'),
    tokens: num(r.tokens, 'messages', 'tokens'),
    tool_calls: calls as unknown as ToolCall[],
  };
}

function toRole(value: unknown): MessageRole {
  const n = num(value, 'messages', 'role');
  if (n !== 1 && n !== 2 && n !== 3) throw new StateDataError('messages', 'role is not 1, 2 or 3');
  return n;
}

export function toEvent(r: EventsTable): EventRow {
  const data = json(r.data, 'events', 'data');
  if (!isObject(data)) throw new StateDataError('events', 'data is not an object');
  return { id: num(r.id, 'events', 'id'), type: str(r.type, 'events', 'type'), at: str(r.at, 'events', 'at'), data };
}

export function toTask(r: TasksTable): TaskIndexRow {
  const cols = ['task_id', 'account', 'workspace', 'dir', 'repo', 'template', 'created_at', 'host'] as const;
  for (const c of cols) str(r[c], 'tasks', c);
  return {
    task_id: r.task_id,
    account: r.account,
    workspace: r.workspace,
    dir: r.dir,
    repo: r.repo,
    template: r.template,
    created_at: r.created_at,
    host: r.host,
  };
}

export function toLease(r: LeasesTable): LeaseRow {
  return {
    name: str(r.name, 'leases', 'name'),
    holder: str(r.holder, 'leases', 'holder'),
    token: num(r.token, 'leases', 'token'),
    expires_at: num(r.expires_at, 'leases', 'expires_at'),
    heartbeat_at: num(r.heartbeat_at, 'leases', 'heartbeat_at'),
  };
}

// Validation at the edge for conversation files written by the recorder (or edited, or torn by a
// crash): a value that is not what src/domain/conversation.ts says is refused with the reason, so
// readers skip it with a warning instead of adding garbage to a ledger.
import type { ConversationRecord, ConversationStats, Message, ModelUsageRow, ToolCall } from '../domain/conversation.js';
import { CONVERSATION_ID_PATTERN, CONVERSATION_STATUSES, TOOL_CALL_STATUSES } from '../domain/conversation.js';

type Obj = Record<string, unknown>;
export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const count = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const countOrNull = (v: unknown): v is number | null => v === null || count(v);

function checkModel(v: unknown): ModelUsageRow | string {
  if (!isObj(v) || typeof v['model'] !== 'string') return 'a models row without a model name';
  for (const k of ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_creation_tokens'])
    if (!count(v[k])) return `models row ${v['model']}: ${k} is not a count`;
  if (!countOrNull(v['cost_usd'])) return `models row ${v['model']}: cost_usd is not a number or null`;
  return v as unknown as ModelUsageRow;
}

export function checkStats(v: unknown): Checked<ConversationStats> {
  if (!isObj(v)) return { ok: false, problem: 'stats is not an object' };
  for (const k of ['messages_exchanged', 'total_input_tokens', 'total_cache_tokens', 'cache_read_tokens', 'cache_creation_tokens']) {
    if (!count(v[k])) return { ok: false, problem: `stats.${k} is not a count` };
  }
  if (!countOrNull(v['total_output_tokens'])) return { ok: false, problem: 'stats.total_output_tokens is not a count or null' };
  if (!countOrNull(v['cost_usd'])) return { ok: false, problem: 'stats.cost_usd is not a number or null' };
  if (typeof v['partial'] !== 'boolean') return { ok: false, problem: 'stats.partial is not true or false' };
  const models: ModelUsageRow[] = [];
  if (v['models'] !== undefined) {
    if (!Array.isArray(v['models'])) return { ok: false, problem: 'stats.models is not a list' };
    for (const m of v['models']) {
      const row = checkModel(m);
      if (typeof row === 'string') return { ok: false, problem: `stats.${row}` };
      models.push(row);
    }
  }
  return { ok: true, value: { ...(v as unknown as ConversationStats), models } };
}

export function checkConversationRecord(v: unknown): Checked<ConversationRecord> {
  if (!isObj(v)) return { ok: false, problem: 'not a JSON object' };
  if (typeof v['id'] !== 'string' || !CONVERSATION_ID_PATTERN.test(v['id']))
    return { ok: false, problem: 'id is not a conversation id (conv- and 12 hex digits)' };
  for (const k of ['task_id', 'step_name', 'agent', 'started_at'])
    if (typeof v[k] !== 'string') return { ok: false, problem: `${k} is not text` };
  for (const k of ['model', 'session_id'])
    if (v[k] !== undefined && typeof v[k] !== 'string') return { ok: false, problem: `${k} is not text` };
  if (!Number.isInteger(v['attempt']) || (v['attempt'] as number) < 1)
    return { ok: false, problem: 'attempt is not a whole number from 1' };
  if (v['ended_at'] !== null && v['ended_at'] !== undefined && typeof v['ended_at'] !== 'string')
    return { ok: false, problem: 'ended_at is not a time or null' };
  if (!(CONVERSATION_STATUSES as readonly unknown[]).includes(v['status']))
    return { ok: false, problem: `status is not one of ${CONVERSATION_STATUSES.join(', ')}` };
  if (v['continues'] !== null && v['continues'] !== undefined && typeof v['continues'] !== 'string')
    return { ok: false, problem: 'continues is not a conversation id or null' };
  const stats = checkStats(v['stats']);
  if (!stats.ok) return stats;
  return {
    ok: true,
    value: {
      ...(v as unknown as ConversationRecord),
      model: (v['model'] as string | undefined) ?? '',
      session_id: (v['session_id'] as string | undefined) ?? '',
      ended_at: (v['ended_at'] as string | null | undefined) ?? null,
      continues: (v['continues'] as string | null | undefined) ?? null,
      stats: stats.value,
    },
  };
}

function checkToolCall(v: unknown, i: number): ToolCall | string {
  if (!isObj(v)) return `tool_calls[${i}] is not an object`;
  if (typeof v['id'] !== 'string' || typeof v['name'] !== 'string') return `tool_calls[${i}] has no id or name`;
  if (!(TOOL_CALL_STATUSES as readonly unknown[]).includes(v['status']))
    return `tool_calls[${i}].status is not one of ${TOOL_CALL_STATUSES.join(', ')}`;
  return {
    id: v['id'],
    type: typeof v['type'] === 'string' ? v['type'] : 'tool_use',
    name: v['name'],
    input: isObj(v['input']) ? v['input'] : {},
    output: typeof v['output'] === 'string' ? v['output'] : '',
    status: v['status'] as ToolCall['status'],
    error: typeof v['error'] === 'string' ? v['error'] : '',
  };
}

export function checkMessage(v: unknown): Checked<Message> {
  if (!isObj(v)) return { ok: false, problem: 'not a JSON object' };
  if (typeof v['key'] !== 'string' || typeof v['conversation_id'] !== 'string')
    return { ok: false, problem: 'key or conversation_id is not text' };
  if (typeof v['body'] !== 'string') return { ok: false, problem: 'body is not text' };
  if (v['role'] !== 1 && v['role'] !== 2 && v['role'] !== 3)
    return { ok: false, problem: 'role is not 1 (user), 2 (assistant) or 3 (tool)' };
  if (!count(v['timestamp'])) return { ok: false, problem: 'timestamp is not unix seconds' };
  if (v['tokens'] !== undefined && !count(v['tokens'])) return { ok: false, problem: 'tokens is not a count' };
  const calls: ToolCall[] = [];
  if (v['tool_calls'] !== undefined && v['tool_calls'] !== null) {
    if (!Array.isArray(v['tool_calls'])) return { ok: false, problem: 'tool_calls is not a list' };
    for (const [i, c] of v['tool_calls'].entries()) {
      const call = checkToolCall(c, i);
      if (typeof call === 'string') return { ok: false, problem: call };
      calls.push(call);
    }
  }
  return {
    ok: true,
    value: {
      key: v['key'],
      conversation_id: v['conversation_id'],
      body: v['body'],
      role: v['role'],
      timestamp: v['timestamp'],
      tokens: (v['tokens'] as number | undefined) ?? 0,
      tool_calls: calls,
    },
  };
}

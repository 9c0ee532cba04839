// The data the API answers with, as JSON Schema (2020-12, which OpenAPI 3.1 uses). Objects allow
// more fields than listed: clients must ignore what they do not know, so fields can be added.
import { SERVER_CONVERSATION_STATUSES } from '../conversations/conversation-store.js';

const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;
const int = { type: 'integer', minimum: 0 } as const;
const time = { type: 'string', format: 'date-time' } as const;

const stats = {
  type: 'object',
  required: ['messages_exchanged', 'total_input_tokens', 'total_output_tokens', 'cost_usd', 'partial'],
  properties: {
    messages_exchanged: int,
    total_input_tokens: int,
    total_output_tokens: { type: ['integer', 'null'] },
    total_cache_tokens: int,
    cache_read_tokens: int,
    cache_creation_tokens: int,
    cost_usd: { type: ['number', 'null'] },
    partial: { type: 'boolean' },
    models: { type: 'array', items: { type: 'object' } },
  },
} as const;

export const SCHEMAS = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'request_id'],
        properties: {
          code: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
          message: str,
          request_id: str,
          field: { type: 'string', description: 'the request field at fault (400)' },
          retry_after_s: { type: 'integer', minimum: 1, description: '429 and 503: seconds to wait (also the Retry-After header)' },
        },
      },
    },
  },
  Health: {
    type: 'object',
    required: ['status', 'version', 'uptime_s'],
    properties: { status: { enum: ['ok', 'stopping'] }, version: str, uptime_s: int },
  },
  Check: { type: 'object', required: ['ok', 'detail'], properties: { ok: { type: 'boolean' }, detail: str } },
  Ready: {
    type: 'object',
    required: ['status', 'checks', 'version', 'running'],
    properties: {
      status: { enum: ['ready', 'not_ready', 'starting', 'stopping'] },
      checks: { type: 'object', required: ['sandbox', 'store', 'state'], additionalProperties: { $ref: '#/components/schemas/Check' } },
      version: str,
      sandbox: { type: 'object', properties: { ready: { type: 'boolean' }, mode: { enum: ['local', 'sandbox'] } } },
      running: {
        type: 'object',
        required: ['conversations', 'tasks', 'streams'],
        properties: { conversations: int, tasks: int, streams: int },
      },
      event_loop_delay_ms: { type: 'object', properties: { p50: { type: 'number' }, p99: { type: 'number' }, max: { type: 'number' } } },
    },
  },
  Stats: stats,
  Conversation: {
    type: 'object',
    required: ['id', 'account', 'provider', 'sandbox_id', 'created_at', 'updated_at', 'status', 'turns', 'stats'],
    properties: {
      id: str,
      account: str,
      agent_id: nstr,
      provider: { enum: ['claude', 'command'] },
      sandbox_id: nstr,
      session_id: str,
      created_at: time,
      updated_at: time,
      status: { enum: [...SERVER_CONVERSATION_STATUSES] },
      turns: int,
      last_turn: { type: ['object', 'null'] },
      stats: { $ref: '#/components/schemas/Stats' },
    },
  },
  ConversationPage: {
    type: 'object',
    required: ['conversations', 'next_cursor'],
    properties: { conversations: { type: 'array', items: { $ref: '#/components/schemas/Conversation' } }, next_cursor: nstr },
  },
  ConversationDetail: {
    type: 'object',
    required: ['conversation', 'running'],
    properties: { conversation: { $ref: '#/components/schemas/Conversation' }, running: { type: 'boolean' } },
  },
  Message: {
    type: 'object',
    required: ['key', 'conversation_id', 'body', 'role', 'timestamp', 'tokens', 'tool_calls'],
    properties: {
      key: str,
      conversation_id: str,
      body: str,
      role: { enum: [1, 2, 3], description: '1 user, 2 assistant, 3 tool' },
      timestamp: { type: 'number' },
      tokens: int,
      tool_calls: { type: 'array', items: { type: 'object' } },
    },
  },
  MessagePage: {
    type: 'object',
    required: ['conversation_id', 'messages', 'next_cursor'],
    properties: { conversation_id: str, messages: { type: 'array', items: { $ref: '#/components/schemas/Message' } }, next_cursor: nstr },
  },
  Deleted: { type: 'object', required: ['deleted', 'terminated'], properties: { deleted: str, terminated: { type: 'boolean' } } },
  Task: {
    type: 'object',
    required: ['id', 'workspace', 'template', 'state', 'activity', 'step', 'steps', 'created_at', 'updated_at'],
    properties: {
      id: str,
      workspace: str,
      template: str,
      description: str,
      state: str,
      activity: str,
      step: int,
      steps: int,
      step_name: nstr,
      steps_done: int,
      created_at: time,
      updated_at: time,
      branch: str,
    },
  },
  TaskPage: {
    type: 'object',
    required: ['tasks', 'next_cursor'],
    properties: { tasks: { type: 'array', items: { $ref: '#/components/schemas/Task' } }, next_cursor: nstr },
  },
  TaskCreated: { type: 'object', required: ['task', 'events'], properties: { task: { $ref: '#/components/schemas/Task' }, events: str } },
  TaskDetail: {
    type: 'object',
    required: ['task', 'running', 'hook'],
    properties: { task: { $ref: '#/components/schemas/Task' }, running: { type: 'boolean' }, hook: { type: 'object' } },
  },
  TaskActionResult: {
    type: 'object',
    required: ['task_id', 'action'],
    properties: { task_id: str, action: str, result: {}, events: str, state: nstr },
  },
  Event: {
    type: 'object',
    required: ['id', 'type', 'at', 'data'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      type: str,
      at: time,
      data: { type: 'object' },
      source: { type: 'object', properties: { kind: { enum: ['conversation', 'task'] }, id: str } },
    },
  },
  EventPage: {
    type: 'object',
    required: ['events', 'next_cursor'],
    properties: { events: { type: 'array', items: { $ref: '#/components/schemas/Event' } }, next_cursor: nstr },
  },
  FileEntry: {
    type: 'object',
    required: ['name', 'type'],
    properties: { name: str, type: { enum: ['file', 'dir', 'symlink', 'other'] }, size: int },
  },
  FileListing: {
    type: 'object',
    required: ['path', 'entries'],
    properties: { path: str, entries: { type: 'array', items: { $ref: '#/components/schemas/FileEntry' } } },
  },
  TaskVerification: {
    type: 'object',
    required: ['ok', 'key_fingerprint', 'problems', 'receipts'],
    properties: {
      ok: { type: 'boolean' },
      key_fingerprint: nstr,
      problems: { type: 'array', items: str },
      receipts: {
        type: 'array',
        items: {
          type: 'object',
          required: ['receipt_id', 'valid', 'problems'],
          properties: {
            receipt_id: str,
            step_name: str,
            command: str,
            exit_code: int,
            valid: { type: 'boolean' },
            passed: { type: 'boolean' },
            problems: { type: 'array', items: str },
          },
        },
      },
      strict: {
        type: ['object', 'null'],
        required: ['flags', 'ok', 'policies'],
        properties: {
          flags: { type: 'array', items: str },
          ok: { type: 'boolean' },
          policies: {
            type: 'array',
            items: { type: 'object', required: ['name', 'ok', 'detail'], properties: { name: str, ok: { type: 'boolean' }, detail: str } },
          },
        },
      },
    },
  },
  Session: {
    type: 'object',
    required: ['account', 'read_only', 'csrf_token'],
    properties: { account: str, read_only: { type: 'boolean' }, csrf_token: str },
  },
  UsageTotals: {
    type: 'object',
    required: ['conversations', 'partial', 'input_tokens', 'output_tokens', 'output_tokens_complete', 'cost_usd', 'cost_complete'],
    properties: {
      key: str,
      conversations: int,
      partial: int,
      input_tokens: int,
      cache_read_tokens: int,
      cache_creation_tokens: int,
      output_tokens: { type: ['integer', 'null'], description: 'null: no run reported it' },
      output_tokens_complete: { type: 'boolean', description: 'false: some runs could not report theirs (a lower bound)' },
      cost_usd: { type: ['number', 'null'] },
      cost_complete: { type: 'boolean' },
    },
  },
  TaskRun: {
    type: 'object',
    required: ['id', 'task_id', 'step_name', 'attempt', 'agent', 'model', 'started_at', 'ended_at', 'status', 'stats'],
    properties: {
      id: str,
      task_id: str,
      step_name: str,
      attempt: int,
      agent: str,
      model: str,
      session_id: str,
      started_at: time,
      ended_at: { type: ['string', 'null'] },
      status: { enum: ['running', 'completed', 'failed', 'interrupted'] },
      continues: nstr,
      stats: { $ref: '#/components/schemas/Stats' },
    },
  },
  TaskConversations: {
    type: 'object',
    required: ['task_id', 'conversations', 'total'],
    properties: {
      task_id: str,
      conversations: { type: 'array', items: { $ref: '#/components/schemas/TaskRun' } },
      total: { $ref: '#/components/schemas/UsageTotals' },
    },
  },
  Usage: {
    type: 'object',
    required: ['accounts', 'total', 'by_day', 'by_template', 'by_account'],
    properties: {
      accounts: { type: 'array', items: str, description: 'the accounts this token may see (its own)' },
      total: { $ref: '#/components/schemas/UsageTotals' },
      by_day: { type: 'array', items: { $ref: '#/components/schemas/UsageTotals' } },
      by_template: { type: 'array', items: { $ref: '#/components/schemas/UsageTotals' } },
      by_account: { type: 'array', items: { $ref: '#/components/schemas/UsageTotals' } },
    },
  },
  Diff: {
    type: 'object',
    required: ['base', 'diff', 'truncated', 'untracked'],
    properties: { base: str, diff: str, truncated: { type: 'boolean' }, untracked: { type: 'array', items: str } },
  },
} as const;

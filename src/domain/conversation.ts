// Conversations and the token ledger (seeds 000 and 001, DESIGN §9): every agent run is a
// conversation in its task's folder, `conversations/<id>/conversation.json` plus
// `conversations/<id>/messages.jsonl` (one seed 000 Message a line, appended as the stream comes).

/** Seed 000: 1 user, 2 assistant, 3 tool. */
export const MESSAGE_ROLE = { user: 1, assistant: 2, tool: 3 } as const;
export type MessageRole = (typeof MESSAGE_ROLE)[keyof typeof MESSAGE_ROLE];

export const TOOL_CALL_STATUSES = ['pending', 'success', 'error'] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** Seed 000's ToolCall: a tool invocation joined (by id) with its result, inside its message. */
export interface ToolCall {
  id: string;
  /** e.g. "tool_use" (Claude Code), "function", "bash_command". */
  type: string;
  name: string;
  input: Record<string, unknown>;
  output: string;
  status: ToolCallStatus;
  error: string;
}

/** Seed 000's Message, one line of messages.jsonl. */
export interface Message {
  /** Unique within the conversation (the agent's message id when it has one). */
  key: string;
  conversation_id: string;
  body: string;
  role: MessageRole;
  /** Unix seconds. */
  timestamp: number;
  /** Tokens of this message as the agent reported them (0 when unknown). */
  tokens: number;
  tool_calls: ToolCall[];
}

export const CONVERSATION_STATUSES = ['running', 'completed', 'failed', 'interrupted'] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];

/** Tokens and cost of one model within a conversation (Claude Code's result `modelUsage`). */
export interface ModelUsageRow {
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number | null;
}

/**
 * Seed 000's ConversationStats plus the ledger's detail. Totals come from the agent's final
 * result; a run that died before it is `partial`: input and cache tokens recovered from its
 * assistant messages (deduplicated by message id), output tokens and cost unknown (null, not 0).
 */
export interface ConversationStats {
  messages_exchanged: number;
  total_input_tokens: number;
  total_output_tokens: number | null;
  /** cache_read_tokens + cache_creation_tokens. */
  total_cache_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number | null;
  /** True when the totals are not the agent's own final figures. */
  partial: boolean;
  /**
   * Set on a cut-off run that was waiting for a model API answer when it was stopped: an answer
   * the API sent then is billed but no client counted it (lost in flight). Absent otherwise.
   */
  lost_in_flight?: boolean;
  /** Per model, when the agent reports it. */
  models: ModelUsageRow[];
}

export interface ConversationRecord {
  id: string;
  task_id: string;
  step_name: string;
  /** 1-based step attempt this run belongs to. */
  attempt: number;
  /** "claude" or "command". */
  agent: string;
  model: string;
  /** The agent's own session id (Claude Code), when known. */
  session_id: string;
  /** RFC 3339 UTC. */
  started_at: string;
  ended_at: string | null;
  status: ConversationStatus;
  /** The conversation this run resumes (a continued agent session), or null. */
  continues: string | null;
  stats: ConversationStats;
  /** Tool calls the agent was refused (Claude Code's result `permission_denials`); absent when none. */
  permission_denials?: PermissionDenial[];
}

/** One tool call the agent's permission settings refused (Claude Code's result `permission_denials`). */
export interface PermissionDenial {
  tool_name: string;
  tool_use_id: string;
  tool_input: Record<string, unknown>;
}

export const CONVERSATION_FILE_NAME = 'conversation.json';
export const MESSAGES_FILE_NAME = 'messages.jsonl';
export const CONVERSATIONS_DIR_NAME = 'conversations';

/** Conversation ids: `conv-` + 12 hex (safe as a folder name). */
export const CONVERSATION_ID_PATTERN = /^conv-[0-9a-f]{12}$/;

export function emptyStats(): ConversationStats {
  return {
    messages_exchanged: 0,
    total_input_tokens: 0,
    total_output_tokens: 0,
    total_cache_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    cost_usd: 0,
    partial: false,
    models: [],
  };
}

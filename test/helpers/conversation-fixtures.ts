// Conversation files in the format of src/domain/conversation.ts, for tests of the readers
// (usage, conversation, hook status, HOOK.md). The readers under test are the real ones.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversationRecord, ConversationStats, Message, ToolCall } from '../../src/domain/conversation.js';

let counter = 0;

export function conversationId(): string {
  counter++;
  return `conv-${counter.toString(16).padStart(12, '0')}`;
}

export function stats(over: Partial<ConversationStats> = {}): ConversationStats {
  const s: ConversationStats = {
    messages_exchanged: 3,
    total_input_tokens: 100,
    total_output_tokens: 20,
    total_cache_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    cost_usd: 0.01,
    partial: false,
    models: [],
    ...over,
  };
  s.total_cache_tokens = s.cache_read_tokens + s.cache_creation_tokens;
  return s;
}

/** A cut-off run: output and cost unknown, marked partial. */
export function partialStats(over: Partial<ConversationStats> = {}): ConversationStats {
  return stats({ total_output_tokens: null, cost_usd: null, partial: true, ...over });
}

export function record(taskId: string, over: Partial<ConversationRecord> = {}): ConversationRecord {
  return {
    id: conversationId(),
    task_id: taskId,
    step_name: 'implement',
    attempt: 1,
    agent: 'claude',
    model: 'claude-sonnet-test',
    session_id: 'sess-1',
    started_at: '2026-01-10T10:00:00Z',
    ended_at: '2026-01-10T10:01:00Z',
    status: 'completed',
    continues: null,
    stats: stats(),
    ...over,
  };
}

export function toolCall(over: Partial<ToolCall> = {}): ToolCall {
  return {
    id: 'toolu_1',
    type: 'tool_use',
    name: 'Write',
    input: { file_path: 'src/a.ts', content: 'x' },
    output: 'ok',
    status: 'success',
    error: '',
    ...over,
  };
}

export function message(conversation: string, over: Partial<Message> = {}): Message {
  return {
    key: `msg-${counter++}`,
    conversation_id: conversation,
    body: 'hello',
    role: 2,
    timestamp: 1768039200,
    tokens: 0,
    tool_calls: [],
    ...over,
  };
}

/** Writes conversations/<id>/conversation.json and messages.jsonl (one message a line). */
export function writeConversation(taskDir: string, rec: ConversationRecord, messages: Message[] = []): string {
  const dir = join(taskDir, 'conversations', rec.id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'conversation.json'), `${JSON.stringify(rec, null, 2)}\n`);
  writeFileSync(join(dir, 'messages.jsonl'), messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
  return dir;
}

export function appendRaw(taskDir: string, id: string, text: string): void {
  appendFileSync(join(taskDir, 'conversations', id, 'messages.jsonl'), text);
}

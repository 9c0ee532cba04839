// Reading what the recorder wrote, checked at the edge: a record that does not look like a
// ConversationRecord is skipped, and messages.jsonl yields its whole lines only (a line cut by a
// crash has no newline yet and is ignored).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { ConversationRecord, Message } from '../domain/conversation.js';
import { CONVERSATION_ID_PATTERN, CONVERSATION_STATUSES } from '../domain/conversation.js';
import { conversationFiles, conversationsDir } from './paths.js';

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isConversationRecord(v: unknown): v is ConversationRecord {
  if (!isObj(v) || !isObj(v['stats'])) return false;
  return (
    typeof v['id'] === 'string' &&
    CONVERSATION_ID_PATTERN.test(v['id']) &&
    typeof v['task_id'] === 'string' &&
    typeof v['step_name'] === 'string' &&
    typeof v['attempt'] === 'number' &&
    typeof v['session_id'] === 'string' &&
    typeof v['started_at'] === 'string' &&
    (CONVERSATION_STATUSES as readonly unknown[]).includes(v['status']) &&
    typeof v['stats']['total_input_tokens'] === 'number'
  );
}

export function readConversationRecord(taskDir: string, id: string): ConversationRecord | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(conversationFiles(taskDir, id).record, 'utf8'));
    return isConversationRecord(parsed) && parsed.id === id ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The task's conversations, oldest first (by started_at). */
export function listConversations(taskDir: string): ConversationRecord[] {
  const dir = conversationsDir(taskDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => CONVERSATION_ID_PATTERN.test(name))
    .map((id) => readConversationRecord(taskDir, id))
    .filter((r): r is ConversationRecord => r !== undefined)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
}

/** Whole, parseable lines of messages.jsonl, in file order. */
export function readMessages(path: string): Message[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const end = text.lastIndexOf('\n');
  const messages: Message[] = [];
  for (const line of text.slice(0, end + 1).split('\n')) {
    if (line.trim().length === 0) continue;
    try {
      const m: unknown = JSON.parse(line);
      if (isObj(m) && typeof m['key'] === 'string' && typeof m['role'] === 'number') messages.push(m as unknown as Message);
    } catch {
      // A damaged line (edited by hand): skipped, the others still read.
    }
  }
  return messages;
}

/** The latest conversation of this agent session: the one a resumed run continues. */
export function conversationOfSession(taskDir: string, sessionId: string): ConversationRecord | undefined {
  return listConversations(taskDir)
    .filter((r) => r.session_id === sessionId)
    .at(-1);
}

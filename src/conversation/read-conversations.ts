// Reading a task's conversations (docs/conversations.md): conversations/<id>/conversation.json and
// messages.jsonl, validated. A file or line that is not valid is skipped with a warning: a torn
// last line after a crash, or a hand-edited file, never stops a reader.
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversationRecord, Message } from '../domain/conversation.js';
import { CONVERSATION_FILE_NAME, CONVERSATION_ID_PATTERN, CONVERSATIONS_DIR_NAME, MESSAGES_FILE_NAME } from '../domain/conversation.js';
import { checkConversationRecord, checkMessage } from './validate-record.js';

export type Warn = (text: string) => void;

export function conversationsDir(taskDir: string): string {
  return join(taskDir, CONVERSATIONS_DIR_NAME);
}

/** Every valid conversation of a task, oldest first (by started_at, then id). */
export function listConversations(taskDir: string, warn: Warn): ConversationRecord[] {
  const dir = conversationsDir(taskDir);
  if (!existsSync(dir)) return [];
  const found: ConversationRecord[] = [];
  for (const name of readdirSync(dir).sort()) {
    // Folder names come from disk: only conversation ids are read, so nothing outside is touched.
    if (!CONVERSATION_ID_PATTERN.test(name)) continue;
    const path = join(dir, name, CONVERSATION_FILE_NAME);
    if (!existsSync(path)) continue;
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      warn(`${path}: not valid JSON (${(error as Error).message}); skipped`);
      continue;
    }
    const checked = checkConversationRecord(data);
    if (!checked.ok) {
      warn(`${path}: ${checked.problem}; skipped`);
      continue;
    }
    if (checked.value.id !== name) {
      warn(`${path}: its id ${checked.value.id} is not its folder's name; skipped`);
      continue;
    }
    found.push(checked.value);
  }
  return found.sort((a, b) => (a.started_at === b.started_at ? (a.id < b.id ? -1 : 1) : a.started_at < b.started_at ? -1 : 1));
}

/** Valid messages of `text` in order; with `fromEnd`, only the last `fromEnd` (parsed backwards). */
function parseLines(text: string, path: string, warn: Warn, firstIsPartial: boolean, fromEnd?: number): Message[] {
  const messages: Message[] = [];
  let bad = 0;
  const lines = text.split('\n');
  const order = fromEnd === undefined ? lines.keys() : [...lines.keys()].reverse();
  for (const i of order) {
    if (fromEnd !== undefined && messages.length >= fromEnd) break;
    const line = lines[i]!;
    if (line.trim() === '' || (i === 0 && firstIsPartial)) continue;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch {
      bad++;
      continue;
    }
    const checked = checkMessage(data);
    if (checked.ok) messages.push(checked.value);
    else bad++;
  }
  if (bad > 0) warn(`${path}: ${bad} line${bad === 1 ? '' : 's'} not a valid message; skipped`);
  return fromEnd === undefined ? messages : messages.reverse();
}

export function messagesPath(taskDir: string, conversationId: string): string {
  return join(conversationsDir(taskDir), conversationId, MESSAGES_FILE_NAME);
}

/** Every valid message of a conversation, in file order. */
export function readMessages(taskDir: string, conversationId: string, warn: Warn): Message[] {
  if (!CONVERSATION_ID_PATTERN.test(conversationId)) return [];
  const path = messagesPath(taskDir, conversationId);
  if (!existsSync(path)) return [];
  return parseLines(readFileSync(path, 'utf8'), path, warn, false);
}

const TAIL_BYTES = 128 * 1024;

/** The last `count` valid messages, reading only the end of the file (HOOK.md is rendered often). */
export function readLastMessages(taskDir: string, conversationId: string, count: number, warn: Warn): Message[] {
  if (!CONVERSATION_ID_PATTERN.test(conversationId)) return [];
  const path = messagesPath(taskDir, conversationId);
  if (!existsSync(path)) return [];
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - TAIL_BYTES);
    const buffer = Buffer.alloc(size - start);
    readSync(fd, buffer, 0, buffer.length, start);
    return parseLines(buffer.toString('utf8'), path, warn, start > 0, count);
  } finally {
    closeSync(fd);
  }
}

// Reading what the recorder wrote (docs/conversations.md), checked at the edge: a
// conversation.json that is not a ConversationRecord (src/domain/conversation.ts) is skipped with a
// warning, and messages.jsonl yields its whole, valid lines only: the last line a crash cut has no
// newline yet and is ignored (the message in flight); a complete line that is not a message is
// skipped with a warning. A hand-edited or torn file never stops a reader.
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import type { ConversationRecord, Message } from '../domain/conversation.js';
import { CONVERSATION_ID_PATTERN } from '../domain/conversation.js';
import { compareText } from '../domain/text-order.js';
import { conversationFiles, conversationsDir } from './paths.js';
import { checkConversationRecord, checkMessage } from './validate-record.js';

export type Warn = (text: string) => void;
const quiet: Warn = () => undefined;

export function isConversationRecord(v: unknown): v is ConversationRecord {
  return checkConversationRecord(v).ok;
}

function readRecord(taskDir: string, id: string, warn: Warn): ConversationRecord | undefined {
  const path = conversationFiles(taskDir, id).record;
  if (!existsSync(path)) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    warn(`${path}: not valid JSON (${(error as Error).message}); skipped`);
    return undefined;
  }
  const checked = checkConversationRecord(data);
  if (!checked.ok) {
    warn(`${path}: ${checked.problem}; skipped`);
    return undefined;
  }
  if (checked.value.id !== id) {
    warn(`${path}: its id ${checked.value.id} is not its folder's name; skipped`);
    return undefined;
  }
  return checked.value;
}

export function readConversationRecord(taskDir: string, id: string, warn: Warn = quiet): ConversationRecord | undefined {
  return CONVERSATION_ID_PATTERN.test(id) ? readRecord(taskDir, id, warn) : undefined;
}

/** The task's valid conversations, oldest first (by started_at, then id). */
export function listConversations(taskDir: string, warn: Warn = quiet): ConversationRecord[] {
  const dir = conversationsDir(taskDir);
  if (!existsSync(dir)) return [];
  return (
    readdirSync(dir)
      .sort()
      // Folder names come from disk: only conversation ids are read, so nothing outside is touched.
      .filter((name) => CONVERSATION_ID_PATTERN.test(name))
      .map((id) => readRecord(taskDir, id, warn))
      .filter((r): r is ConversationRecord => r !== undefined)
      .sort((a, b) => compareText(a.started_at, b.started_at) || compareText(a.id, b.id))
  );
}

/** Valid messages of whole lines; with `fromEnd`, only the last `fromEnd` (parsed backwards). */
function parseLines(text: string, path: string, warn: Warn, firstIsPartial: boolean, fromEnd?: number): Message[] {
  const whole = text.slice(0, text.lastIndexOf('\n') + 1).split('\n');
  const messages: Message[] = [];
  let bad = 0;
  const order = fromEnd === undefined ? whole.keys() : [...whole.keys()].reverse();
  for (const i of order) {
    if (fromEnd !== undefined && messages.length >= fromEnd) break;
    const line = whole[i]!;
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

/** Whole, valid lines of a messages.jsonl, in file order. */
export function readMessages(path: string, warn: Warn = quiet): Message[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return parseMessages(text, path, warn);
}

/** The valid messages of messages.jsonl's text (`path`: where it is, for warnings). */
export function parseMessages(text: string, path: string, warn: Warn = quiet): Message[] {
  return parseLines(text, path, warn, false);
}

const TAIL_BYTES = 128 * 1024;

/** The last `count` valid messages, reading only the end of the file (HOOK.md is rendered often). */
export function readLastMessages(path: string, count: number, warn: Warn = quiet): Message[] {
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

/** The latest conversation of this agent session: the one a resumed run continues. */
export function conversationOfSession(taskDir: string, sessionId: string): ConversationRecord | undefined {
  return listConversations(taskDir)
    .filter((r) => r.session_id === sessionId)
    .at(-1);
}

// A conversation's messages with their tool calls, in the server state: each turn's agent run
// records them in its run folder (as every agent run does), and at the turn's end they go into the
// state, from which the API reads them, so every server on it answers GET …/messages. Stored keys carry their run's
// id ("<run>:<key>"): two turns' keys never collide, and the API gives back the run's own key.

import { existsSync, readdirSync } from 'node:fs';
import { conversationsDir, conversationFiles as runFiles } from '../../conversation/paths.js';
import { listConversations as listRuns, parseMessages, readMessages as readRunMessages } from '../../conversation/read.js';
import { CONVERSATION_ID_PATTERN, type Message } from '../../domain/conversation.js';
import type { ServerState, StoredMessage } from '../state/types.js';
import { conversationFiles } from './conversation-store.js';

export function toStored(m: Message, run: string, account: string, conversationId: string, turn: number): StoredMessage {
  return { ...m, key: `${run}:${m.key}`, conversation_id: conversationId, account, turn };
}

/** As the agent recorded it: its run's id as conversation_id, its own key. */
export function fromStored(m: StoredMessage): Message {
  const cut = m.key.indexOf(':');
  return {
    key: m.key.slice(cut + 1),
    conversation_id: m.key.slice(0, cut),
    body: m.body,
    role: m.role,
    timestamp: m.timestamp,
    tokens: m.tokens,
    tool_calls: m.tool_calls,
  };
}

/** The messages of a conversation's run folders, turn by turn (the run's place in the order they started). */
export function messagesFromRuns(home: string, account: string, conversationId: string): StoredMessage[] {
  const dir = conversationFiles(home, account, conversationId).dir;
  return listRuns(dir).flatMap((run, i) =>
    readRunMessages(runFiles(dir, run.id).messages).map((m) => toStored(m, run.id, account, conversationId, i + 1)),
  );
}

/**
 * The messages of run `runId`, the `place`-th of the conversation (the turn that just ended),
 * from `text` (its messages.jsonl as the recorder appended it) or, without it, from its folder.
 */
export function lastRunMessages(
  home: string,
  account: string,
  conversationId: string,
  run: { id: string; place: number; text?: string | undefined },
): StoredMessage[] {
  const path = runFiles(conversationFiles(home, account, conversationId).dir, run.id).messages;
  const messages = run.text === undefined ? readRunMessages(path) : parseMessages(run.text, path);
  return messages.map((m) => toStored(m, run.id, account, conversationId, run.place));
}

/**
 * The place of a conversation's next run among its runs: one after the last turn's, which its
 * record keeps; for a record without it (an older atlas's), one after the run folders on this disk.
 */
export function nextRunPlace(home: string, account: string, conversationId: string, last: { run_place?: number } | null): number {
  if (last?.run_place !== undefined) return last.run_place + 1;
  const dir = conversationsDir(conversationFiles(home, account, conversationId).dir);
  if (!existsSync(dir)) return 1;
  return readdirSync(dir).filter((name) => CONVERSATION_ID_PATTERN.test(name)).length + 1;
}

/**
 * The conversation's messages in the order recorded. A conversation an older atlas ran has them
 * only in its run folders: they are brought into the state on this first read.
 */
export async function conversationMessages(state: ServerState, home: string, account: string, conversationId: string): Promise<Message[]> {
  let stored = await state.listMessages(account, conversationId);
  if (stored.length === 0) {
    const fromRuns = messagesFromRuns(home, account, conversationId);
    if (fromRuns.length > 0) {
      await state.putMessages(fromRuns);
      stored = await state.listMessages(account, conversationId);
    }
  }
  return stored.map(fromStored);
}

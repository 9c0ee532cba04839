// Server conversations on disk, one folder each under the account that owns it:
//   $ATLAS_HOME/server/accounts/<account>/conversations/<id>/
//     conversation.json   the record below (stats per seed 001 1.5: the totals of its turns)
//     conversations/      one recorded agent run per turn (issue 9: conversation.json, messages.jsonl)
//     events.jsonl        the SSE event log
//     owner.json          the server process running a turn (liveness, as for tasks)
//     workspace/          the conversation's sandbox workspace
// An account's folder holds only its own conversations: another account's ids are simply not there.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversationStats, ConversationStatus } from '../domain/conversation.js';
import { CONVERSATION_FILE_NAME } from '../domain/conversation.js';
import { compareText } from '../domain/text-order.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { toJson } from '../store/json-file.js';
import { EVENTS_FILE_NAME } from './event-log.js';
import { PATH_ID } from './http.js';
import { ACCOUNT_PATTERN, serverDir } from './tokens.js';

export const PROVIDERS = ['claude', 'command'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface TurnRecord {
  turn: number;
  started_at: string;
  ended_at: string | null;
  ok: boolean | null;
  error: string | null;
}

export interface ServerConversation {
  id: string;
  account: string;
  agent_id: string | null;
  provider: Provider;
  /** The sandbox this conversation runs in (null: none yet, or terminated). */
  sandbox_id: string | null;
  /** The agent's own session, continued on the next prompt (Claude Code --resume). */
  session_id: string;
  created_at: string;
  updated_at: string;
  /** `cancelled`: its last turn was stopped over the API (not recovered at restart). */
  status: ConversationStatus | 'idle' | 'cancelled';
  turns: number;
  last_turn: TurnRecord | null;
  stats: ConversationStats;
}

export function conversationsDir(home: string, account: string): string {
  return join(serverDir(home), 'accounts', account, 'conversations');
}

export function conversationFiles(home: string, account: string, id: string) {
  const dir = join(conversationsDir(home, account), id);
  return {
    dir,
    record: join(dir, CONVERSATION_FILE_NAME),
    events: join(dir, EVENTS_FILE_NAME),
    owner: join(dir, 'owner.json'),
    workspace: join(dir, 'workspace'),
  };
}

export function readConversation(home: string, account: string, id: string): ServerConversation | undefined {
  try {
    const data = JSON.parse(readFileSync(conversationFiles(home, account, id).record, 'utf8')) as ServerConversation;
    return data.id === id && data.account === account ? data : undefined;
  } catch {
    return undefined;
  }
}

export function writeConversation(home: string, conversation: ServerConversation): void {
  const files = conversationFiles(home, conversation.account, conversation.id);
  mkdirSync(files.dir, { recursive: true });
  writeFileAtomic(files.record, toJson(conversation), { durable: false });
}

export function listConversations(home: string, account: string): ServerConversation[] {
  let names: string[] = [];
  try {
    names = readdirSync(conversationsDir(home, account));
  } catch {
    return [];
  }
  return names
    .filter((n) => PATH_ID.test(n))
    .map((n) => readConversation(home, account, n))
    .filter((c): c is ServerConversation => c !== undefined)
    .sort((a, b) => compareText(b.updated_at, a.updated_at));
}

/** Accounts that have a folder (for start-up recovery). */
export function listAccounts(home: string): string[] {
  try {
    return readdirSync(join(serverDir(home), 'accounts')).filter((n) => ACCOUNT_PATTERN.test(n));
  } catch {
    return [];
  }
}

export function removeConversation(home: string, account: string, id: string): void {
  rmSync(conversationFiles(home, account, id).dir, { recursive: true, force: true });
}

export function workspaceExists(home: string, account: string, id: string): boolean {
  return existsSync(conversationFiles(home, account, id).workspace);
}

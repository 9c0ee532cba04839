// Server conversations: the record below (stats per seed 001 1.5: the totals of its turns) lives in
// the server state (src/server/state); the rest on disk, one folder each under its account:
//   $ATLAS_HOME/server/accounts/<account>/conversations/<id>/
//     conversation.json   the record, as an older atlas kept it (adopted into the state, then unused)
//     conversations/      one recorded agent run per turn (issue 9: conversation.json, messages.jsonl)
//     events.jsonl        the SSE event log
//     owner.json          the server process running a turn (liveness, as for tasks)
//     workspace/          the conversation's sandbox workspace
// An account's records and folder hold only its own conversations: another account's ids are
// simply not there.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ConversationStats } from '../../domain/conversation.js';
import { CONVERSATION_FILE_NAME, CONVERSATION_STATUSES } from '../../domain/conversation.js';
import { compareText } from '../../domain/text-order.js';
import { PATH_ID } from '../http/http.js';
import { EVENTS_FILE_NAME } from '../state/event-log.js';
import { ACCOUNT_PATTERN, serverDir } from '../state/token-file.js';
import type { ConversationRow, ServerState } from '../state/types.js';

export const PROVIDERS = ['claude', 'command'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface TurnRecord {
  turn: number;
  started_at: string;
  ended_at: string | null;
  ok: boolean | null;
  error: string | null;
  /** The turn's agent run (its folder under the conversation's): what the next turn continues. Absent in older records. */
  run?: string;
  /** That run's place among the conversation's runs (its messages' `turn` in the state). Absent in older records. */
  run_place?: number;
}

/** A conversation's states on the server: the recorder's, plus `idle` (no turn yet) and `cancelled`. */
export const SERVER_CONVERSATION_STATUSES = ['idle', ...CONVERSATION_STATUSES, 'cancelled'] as const;
export type ServerConversationStatus = (typeof SERVER_CONVERSATION_STATUSES)[number];

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
  status: ServerConversationStatus;
  turns: number;
  last_turn: TurnRecord | null;
  stats: ConversationStats;
}

export function conversationsDir(home: string, account: string): string {
  return join(serverDir(home), 'accounts', account, 'conversations');
}

/** Where this machine's servers record the process groups of their turns' agents (liveness/group-journal.ts). */
export function processGroupsDir(home: string): string {
  return join(serverDir(home), 'process-groups');
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

/** A conversation.json written by an older atlas (to adopt it), or undefined. */
export function readConversationFile(home: string, account: string, id: string): ServerConversation | undefined {
  try {
    const data = JSON.parse(readFileSync(conversationFiles(home, account, id).record, 'utf8')) as ServerConversation;
    return data.id === id && data.account === account ? data : undefined;
  } catch {
    return undefined;
  }
}

/** The conversation.json files of an account's folders, newest first. */
export function listConversationFiles(home: string, account: string): ServerConversation[] {
  return conversationFolders(home, account)
    .map((n) => readConversationFile(home, account, n))
    .filter((c): c is ServerConversation => c !== undefined)
    .sort((a, b) => compareText(b.updated_at, a.updated_at));
}

/** The ids of an account's conversation folders. */
export function conversationFolders(home: string, account: string): string[] {
  try {
    return readdirSync(conversationsDir(home, account)).filter((n) => PATH_ID.test(n));
  } catch {
    return [];
  }
}

/** Accounts that have a folder. */
export function listAccounts(home: string): string[] {
  try {
    return readdirSync(join(serverDir(home), 'accounts')).filter((n) => ACCOUNT_PATTERN.test(n));
  } catch {
    return [];
  }
}

/** A record read back from the state, checked as the server's own type. */
function fromRow(row: ConversationRow): ServerConversation {
  if (
    !(PROVIDERS as readonly string[]).includes(row.provider) ||
    !(SERVER_CONVERSATION_STATUSES as readonly string[]).includes(row.status)
  ) {
    throw new Error(
      `server state: conversation ${row.account}/${row.id} has provider "${row.provider}" and status "${row.status}", which this atlas does not know`,
    );
  }
  return row as ServerConversation;
}

export async function readConversation(state: ServerState, account: string, id: string): Promise<ServerConversation | undefined> {
  const row = await state.getConversation(account, id);
  return row ? fromRow(row) : undefined;
}

export async function writeConversation(state: ServerState, conversation: ServerConversation): Promise<void> {
  await state.putConversation(conversation);
}

/** Newest first. */
export async function listConversations(state: ServerState, account: string): Promise<ServerConversation[]> {
  return (await state.listConversations(account)).map(fromRow);
}

/** The record, its messages in the state, and its folder (workspace, runs, event log). */
export async function removeConversation(state: ServerState, home: string, account: string, id: string): Promise<void> {
  await state.removeConversation(account, id);
  rmSync(conversationFiles(home, account, id).dir, { recursive: true, force: true });
}

export function workspaceExists(home: string, account: string, id: string): boolean {
  return existsSync(conversationFiles(home, account, id).workspace);
}

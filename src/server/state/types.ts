// The server's state behind one interface (issue 23): accounts and tokens, conversations and their
// stats, messages with tool calls, event logs, the task index and leases. Two backends share one
// query layer (Kysely): SQLite embedded in the process (the default, one machine) and PostgreSQL
// (several replicas). Records here are plain data, checked when read back from either database.
import type { ConversationStats, Message } from '../../domain/conversation.js';

export interface AccountRecord {
  name: string;
  created_at: string;
}

export interface TokenRow {
  id: string;
  account: string;
  /** Hex SHA-256 of the token: the token itself is never stored. */
  sha256: string;
  created_at: string;
  expires_at: string | null;
  read_only: boolean;
  /** When it was revoked (absent or null: live). */
  revoked_at?: string | null;
}

export interface TurnRow {
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

export interface ConversationRow {
  id: string;
  account: string;
  agent_id: string | null;
  provider: string;
  sandbox_id: string | null;
  session_id: string;
  created_at: string;
  updated_at: string;
  status: string;
  turns: number;
  last_turn: TurnRow | null;
  stats: ConversationStats;
}

export interface StoredMessage extends Message {
  account: string;
  /** The turn that recorded it (0: not tied to a turn). */
  turn: number;
}

export interface EventRow {
  id: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
  /** Its copy in another log (CopyTo), stored in the same transaction. */
  copy?: EventRow;
}

/**
 * Where a log's events are copied in the transaction that stores them: the account's log
 * (GET /events), each copy's data with `source` = { kind, id, event_id }.
 */
export interface CopyTo {
  log: string;
  source: { kind: 'conversation' | 'task'; id: string };
}

export interface TaskIndexRow {
  task_id: string;
  account: string;
  workspace: string;
  dir: string;
  repo: string;
  template: string;
  created_at: string;
  /**
   * The machine whose disk holds the task (its repository, worktree and hook): a task stays where
   * it started. '' when not recorded (rows from before migration 0003).
   */
  host: string;
}

export interface LeaseRow {
  name: string;
  /** Who holds it (a replica's id), '' once released. */
  holder: string;
  /** Increases on every takeover: a holder that lost the lease carries an older one. */
  token: number;
  /** Epoch milliseconds. */
  expires_at: number;
  heartbeat_at: number;
}

export type LeaseClaim = { ok: true; token: number } | { ok: false; holder: LeaseRow };

/** A holder's proof that it still has a lease: appends carrying an outdated one are refused. */
export interface Fence {
  lease: string;
  token: number;
}

export interface AccountsStore {
  ensureAccount(name: string, now?: Date): Promise<void>;
  listAccounts(): Promise<AccountRecord[]>;
  /** Adds a token (and its account); false when a token with that id exists, or existed. */
  addToken(row: TokenRow): Promise<boolean>;
  /** Revokes the token; returns it, or undefined when there is no live token with that id. */
  revokeToken(id: string, now?: Date): Promise<TokenRow | undefined>;
  /** Live (not revoked) tokens, oldest first. */
  listTokens(): Promise<TokenRow[]>;
  /** Every token ever added, revoked ones too (with revoked_at). */
  allTokens(): Promise<TokenRow[]>;
  /** The live token with that hash. */
  tokenByHash(sha256: string): Promise<TokenRow | undefined>;
}

export interface ConversationsStore {
  putConversation(row: ConversationRow): Promise<void>;
  getConversation(account: string, id: string): Promise<ConversationRow | undefined>;
  /** Newest first (by updated_at). */
  listConversations(account: string): Promise<ConversationRow[]>;
  /** Removes the conversation and its messages (its event log keeps its counter: ids never repeat). */
  removeConversation(account: string, id: string): Promise<void>;
}

export interface MessagesStore {
  /** Whether messages live in the state's database (not DynamoDB): then a turn's end stores them in its transaction. */
  readonly messagesInDatabase: boolean;
  /** Adds messages in one transaction; a message whose key the conversation already has is replaced. */
  putMessages(messages: StoredMessage[]): Promise<void>;
  /** Turn by turn, in the order they were first put in; only one turn's when `turn` is given. */
  listMessages(account: string, conversationId: string, options?: { limit?: number; turn?: number }): Promise<StoredMessage[]>;
}

export interface EventsStore {
  /**
   * Appends with the next id of that log, assigned by the database in the same transaction (ids
   * unique and increasing per log across every process on this database). With a fence, the
   * append is refused (LeaseLostError) unless the lease still carries that token.
   */
  appendEvent(log: string, type: string, data: Record<string, unknown>, fence?: Fence, copy?: CopyTo): Promise<EventRow>;
  /** Appends these events in order, in one transaction (all or none), as appendEvent does one. */
  appendEvents(log: string, events: { type: string; data: Record<string, unknown> }[], fence?: Fence, copy?: CopyTo): Promise<EventRow[]>;
  eventsAfter(log: string, afterId: number, limit?: number): Promise<EventRow[]>;
  lastEventId(log: string): Promise<number>;
  /** Drops a log's events; its counter stays, so a log made again continues after the old ids. */
  dropEvents(log: string): Promise<void>;
  /**
   * Brings in events that already have ids (an import): ids present are left alone, and the
   * counter moves up to the highest id or `floor` (a removed log's last id), never down.
   * Returns how many were new.
   */
  importEvents(log: string, events: EventRow[], floor?: number): Promise<number>;
  /**
   * Starts a turn: the conversation's record (running) and the turn's first events, fenced as
   * appendEvents is; on SQLite in one transaction (one commit, all or none).
   */
  startTurn(
    record: ConversationRow,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence?: Fence,
    copy?: CopyTo,
  ): Promise<EventRow[]>;
  /**
   * Ends a turn in one transaction, fenced by its lease: the conversation's final record (if
   * any), the turn's messages (when messagesInDatabase), its last events, and the lease given back.
   * A server that dies before it commits leaves the turn running with its lease (to expire); after,
   * everything is there. Nothing is written (LeaseLostError) when the lease no longer carries that token.
   */
  finishTurn(
    record: ConversationRow | undefined,
    log: string,
    events: { type: string; data: Record<string, unknown> }[],
    fence: Fence,
    messages?: StoredMessage[],
    copy?: CopyTo,
  ): Promise<EventRow[]>;
  /** Every log with its counter (the last id it handed out), by name. */
  logs(): Promise<{ log: string; last_id: number }[]>;
}

export interface TasksStore {
  putTask(row: TaskIndexRow): Promise<void>;
  getTask(taskId: string): Promise<TaskIndexRow | undefined>;
  listTasks(account: string): Promise<TaskIndexRow[]>;
}

export interface LeasesStore {
  /** Takes a free or expired lease (a new, higher token), or says who holds it. */
  claimLease(name: string, holder: string, ttlMs: number, now?: number): Promise<LeaseClaim>;
  /** Extends a lease still held with that token; false when it was lost. */
  renewLease(name: string, holder: string, token: number, ttlMs: number, now?: number): Promise<boolean>;
  /** Gives it back (the token stays, so the next holder's is higher). */
  releaseLease(name: string, token: number): Promise<void>;
  /** Frees a lease whose holder is known to be dead (its process is gone), before it expires. */
  breakLease(name: string, holder: string): Promise<boolean>;
  getLease(name: string): Promise<LeaseRow | undefined>;
  /** Held leases whose expiry has passed (their holder died or stalled). */
  expiredLeases(now?: number): Promise<LeaseRow[]>;
}

export interface MarkersStore {
  /** Whether something done once (named) was done. */
  hasMarker(name: string): Promise<boolean>;
  /** Records that it was done (again: nothing changes). */
  setMarker(name: string, now?: Date): Promise<void>;
}

/** The names of event logs and leases, the same on every replica. */
export const logKey = {
  conversation: (account: string, id: string) => `conversation:${account}/${id}`,
  task: (taskId: string) => `task:${taskId}`,
  account: (account: string) => `account:${account}`,
};

export type LogOf =
  | { kind: 'conversation'; account: string; id: string }
  | { kind: 'task'; taskId: string }
  | { kind: 'account'; account: string };

/** What a log's (or lease's) key names, as logKey made it; undefined for anything else. */
export function parseLogKey(key: string): LogOf | undefined {
  const colon = key.indexOf(':');
  const kind = key.slice(0, colon);
  const rest = key.slice(colon + 1);
  if (colon < 0 || rest === '') return undefined;
  if (kind === 'task') return { kind, taskId: rest };
  if (kind === 'account') return { kind, account: rest };
  if (kind !== 'conversation') return undefined;
  const slash = rest.indexOf('/');
  return slash > 0 && slash < rest.length - 1 ? { kind, account: rest.slice(0, slash), id: rest.slice(slash + 1) } : undefined;
}

export type StateBackend = 'sqlite' | 'postgres';

export interface ServerState extends AccountsStore, ConversationsStore, MessagesStore, EventsStore, TasksStore, LeasesStore, MarkersStore {
  readonly backend: StateBackend;
  /** Where the state lives, for logs (a PostgreSQL password is redacted). */
  readonly location: string;
  /** One round trip to the database (for /ready); rejects when it does not answer. */
  pingDatabase(): Promise<void>;
  /** One round trip to the message store when it is DynamoDB (nothing to do otherwise). */
  pingMessages(): Promise<void>;
  close(): Promise<void>;
}

export class LeaseLostError extends Error {
  constructor(
    readonly lease: string,
    readonly token: number,
  ) {
    super(`lease ${lease} is no longer held with token ${token}`);
    this.name = 'LeaseLostError';
  }
}

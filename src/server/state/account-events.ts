// The account-wide event stream (GET /events): every event of the account's conversations and
// tasks, copied as it is appended into the account's own log with its own ids, so a dashboard
// follows one stream and resumes it with Last-Event-ID. Each copy says where it came from:
// data.source = { kind, id, event_id }.
import type { EventLog, Mirror, StoredEvent } from './event-log.js';
import { EventLogs } from './event-log.js';
import type { ServerState } from './types.js';
import { logKey, parseLogKey } from './types.js';

export class AccountEvents {
  private readonly logs: EventLogs;
  /**
   * Task id → its account, looked up once (the task index); one promise, so copies keep their order.
   * Bounded (TASKS_KEPT, least recently used dropped): not one entry for every task ever served.
   */
  private readonly taskAccounts = new Map<string, Promise<string | undefined>>();

  constructor(
    private readonly state: () => Promise<ServerState>,
    onError: (error: Error) => void,
  ) {
    this.logs = new EventLogs(state, onError);
  }

  settled(): Promise<void> {
    return this.logs.settled();
  }

  logOf(account: string): EventLog {
    return this.logs.get(logKey.account(account));
  }

  /** Tasks whose account is kept: a server that has run many keeps the recent ones only. */
  static readonly TASKS_KEPT = 1024;

  /** How many tasks' accounts are kept (tests). */
  get taskAccountsKept(): number {
    return this.taskAccounts.size;
  }

  private taskAccount(taskId: string): Promise<string | undefined> {
    const kept = this.taskAccounts.get(taskId);
    if (kept) {
      // Most recently used last: a task still copying events is not the one dropped.
      this.taskAccounts.delete(taskId);
      this.taskAccounts.set(taskId, kept);
      return kept;
    }
    const found = this.state()
      .then((state) => state.getTask(taskId))
      .then(
        (t) => t?.account,
        () => undefined,
      );
    // Not (yet) a task of this server: asked again next time (unless a newer lookup took its place).
    void found.then((account) =>
      account === undefined && this.taskAccounts.get(taskId) === found ? this.taskAccounts.delete(taskId) : undefined,
    );
    this.taskAccounts.set(taskId, found);
    if (this.taskAccounts.size > AccountEvents.TASKS_KEPT) this.taskAccounts.delete(this.taskAccounts.keys().next().value!);
    return found;
  }

  /**
   * Where a conversation's log copies its events, in the transaction that stores them (one commit
   * for both logs; a copy is never lost without its event).
   */
  mirrorOf(key: string): Mirror | undefined {
    const of = parseLogKey(key);
    if (of?.kind !== 'conversation') return undefined;
    return { to: { log: logKey.account(of.account), source: { kind: 'conversation', id: of.id } }, log: this.logOf(of.account) };
  }

  /** Copies one event of a task's log (by its key) into its account's log (a conversation's copies itself: mirrorOf). */
  copy(kind: 'conversation' | 'task', key: string, e: StoredEvent): void {
    const data = (id: string) => ({ ...e.data, source: { kind, id, event_id: e.id } });
    const of = parseLogKey(key);
    if (of?.kind !== 'task') return;
    void this.taskAccount(of.taskId).then((account) => (account ? this.logOf(account).append(e.type, data(of.taskId)) : undefined));
  }
}

// The account-wide event stream (GET /events): every event of the account's conversations and
// tasks, copied as it is appended into the account's own log with its own ids, so a dashboard
// follows one stream and resumes it with Last-Event-ID. Each copy says where it came from:
// data.source = { kind, id, event_id }.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventLog, StoredEvent } from './event-log.js';
import { EventLogs } from './event-log.js';
import type { ServerState } from './state/types.js';
import { logKey } from './state/types.js';
import { serverDir } from './token-file.js';

export class AccountEvents {
  private readonly logs: EventLogs;
  /** Task id → account (the task's record names it). */
  private readonly taskAccounts = new Map<string, string | null>();

  constructor(
    private readonly home: string,
    state: () => Promise<ServerState>,
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

  private taskAccount(taskId: string): string | undefined {
    if (!this.taskAccounts.has(taskId)) {
      let account: string | null = null;
      try {
        account = (JSON.parse(readFileSync(join(serverDir(this.home), 'tasks', `${taskId}.json`), 'utf8')) as { account?: string }).account ?? null;
      } catch {
        // Not (yet) a task of this server: its events are not copied.
      }
      if (account) this.taskAccounts.set(taskId, account);
      else return undefined;
    }
    return this.taskAccounts.get(taskId) ?? undefined;
  }

  /** Copies one event of a conversation's or a task's log (by its key) into its account's log. */
  copy(kind: 'conversation' | 'task', key: string, e: StoredEvent): void {
    let account: string | undefined;
    let id: string;
    if (kind === 'conversation') {
      // conversation:<account>/<id>
      const rest = key.slice('conversation:'.length);
      account = rest.slice(0, rest.indexOf('/'));
      id = rest.slice(rest.indexOf('/') + 1);
    } else {
      id = key.slice('task:'.length);
      account = this.taskAccount(id);
    }
    if (!account) return;
    void this.logOf(account).append(e.type, { ...e.data, source: { kind, id, event_id: e.id } });
  }
}

// The account-wide event stream (GET /events): every event of the account's conversations and
// tasks, copied as it is appended into the account's own log with its own ids, so a dashboard
// follows one stream and resumes it with Last-Event-ID. Each copy says where it came from:
// data.source = { kind, id, event_id }.
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import type { EventLog, StoredEvent } from './event-log.js';
import { EventLogs } from './event-log.js';
import { serverDir } from './tokens.js';

export class AccountEvents {
  private readonly logs = new EventLogs();
  /** Task id → account (a task's log lives in its workspace, which does not name the account). */
  private readonly taskAccounts = new Map<string, string | null>();

  constructor(private readonly home: string) {}

  private accountsDir(): string {
    return join(serverDir(this.home), 'accounts');
  }

  private readonly made = new Set<string>();

  logOf(account: string): EventLog {
    const dir = join(this.accountsDir(), account);
    if (!this.made.has(account)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.made.add(account);
    }
    return this.logs.get(join(dir, 'events.jsonl'));
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

  /** Copies one event of a conversation's or a task's log (path) into its account's log. */
  copy(kind: 'conversation' | 'task', path: string, e: StoredEvent): void {
    const id = basename(dirname(path));
    let account: string | undefined;
    if (kind === 'conversation') {
      // <accounts>/<account>/conversations/<id>/events.jsonl
      const parts = relative(this.accountsDir(), path).split(sep);
      account = parts.length === 4 && parts[1] === 'conversations' ? parts[0] : undefined;
    } else {
      account = this.taskAccount(id);
    }
    if (!account) return;
    this.logOf(account).append(e.type, { ...e.data, source: { kind, id, event_id: e.id } });
  }
}

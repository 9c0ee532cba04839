// The server's event logs, each watched once as it is opened, so /metrics counts the turns and
// task commands that end in this process without the conversation or task code knowing about it.
import { sep } from 'node:path';
import type { EventLog, StoredEvent } from './event-log.js';
import { EventLogs } from './event-log.js';

export type EventObserver = (kind: 'conversation' | 'task', path: string, event: StoredEvent) => void;

export class ObservedEventLogs extends EventLogs {
  private readonly watched = new WeakSet<EventLog>();

  constructor(
    private readonly accountsDir: string,
    private readonly observe: EventObserver,
  ) {
    super();
  }

  override get(path: string): EventLog {
    const log = super.get(path);
    if (!this.watched.has(log)) {
      this.watched.add(log);
      const kind = path.startsWith(this.accountsDir + sep) ? 'conversation' : 'task';
      // From its last id: only what is appended from now on (nothing is read back).
      log.follow(log.lastId, (e) => this.observe(kind, path, e));
    }
    return log;
  }
}

// The server's event logs, each watched once as it is opened, so /metrics counts the turns and
// task commands that end in this process without the conversation or task code knowing about it.
import type { EventLog, Mirror, StoredEvent } from './event-log.js';
import { EventLogs } from './event-log.js';
import type { ServerState } from './types.js';
import { parseLogKey } from './types.js';

export type EventObserver = (kind: 'conversation' | 'task', key: string, event: StoredEvent) => void;

export class ObservedEventLogs extends EventLogs {
  constructor(
    state: () => Promise<ServerState>,
    onError: (error: Error) => void,
    private readonly observe: EventObserver,
    private readonly mirrors: (key: string) => Mirror | undefined = () => undefined,
  ) {
    super(state, onError);
  }

  protected override mirrorOf(key: string): Mirror | undefined {
    return this.mirrors(key);
  }

  protected override opened(key: string, log: EventLog): void {
    const of = parseLogKey(key)?.kind;
    const kind = of === 'conversation' || of === 'task' ? of : undefined;
    // Only what this process appends from now on (nothing is read back).
    if (kind) log.follow(0, (e) => this.observe(kind, key, e), { localOnly: true });
  }
}

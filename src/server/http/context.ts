// What every part of the running server shares: settings, the lifecycle bus, the event logs, the
// JSON-lines log, the per-account stream limit, and whether it is stopping.
import type { Config } from '../../config/schema.js';
import type { Spawner } from '../../exec/spawner/client.js';
import type { LifecycleBus } from '../../lifecycle/types.js';
import type { EventLogs } from '../state/event-log.js';
import type { ServerState } from '../state/types.js';
import { HttpError } from './http.js';
import type { WorkLimiter } from './work-limit.js';

export type LogFn = (entry: Record<string, unknown>) => void;

export interface ServerContext {
  home: string;
  config: Config;
  version: string;
  /**
   * A new lifecycle bus (one per turn, so conversations never wait on each other's hooks);
   * `beforePublish` may refuse the turn's push right before its version is published.
   */
  lifecycle: (beforePublish?: () => Promise<void>) => LifecycleBus;
  /** Loads what `lifecycle` needs, once (not part of the start-up): awaited before a first bus. */
  lifecycleReady: () => Promise<void>;
  logs: EventLogs;
  /** The server state (accounts, tokens, conversation records), opened on first use. */
  state: () => Promise<ServerState>;
  log: LogFn;
  streams: StreamLimiter;
  /** Running turns and task commands per account, with a queue. */
  work: WorkLimiter;
  /** How to run the atlas CLI as a child (node and the bin script). */
  atlasCommand: { command: string; args: string[] };
  /** Steps run on this machine (`--local`) rather than sandboxed. */
  local: boolean;
  /**
   * Starts the turns' agents (src/exec/spawner/), so this large process never forks per turn;
   * undefined if it could not start (this process spawns them itself). Started beside the server's
   * own start-up: a first turn may wait for it.
   */
  spawner: Promise<Spawner | undefined>;
  /** Set when SIGTERM arrived: new work is refused. */
  stopping: string | undefined;
}

/** Open SSE streams per account, refused past the limit (429). */
export class StreamLimiter {
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: number) {}

  acquire(account: string): () => void {
    const n = this.open.get(account) ?? 0;
    if (n >= this.limit) {
      throw new HttpError(
        429,
        'too_many_streams',
        `account ${account} already has ${n} open streams (server.max_streams_per_account = ${this.limit})`,
        { retry_after_s: 1 },
      );
    }
    this.open.set(account, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(account) ?? 1) - 1;
      if (left <= 0) this.open.delete(account);
      else this.open.set(account, left);
    };
  }

  total(): number {
    let n = 0;
    for (const v of this.open.values()) n += v;
    return n;
  }
}

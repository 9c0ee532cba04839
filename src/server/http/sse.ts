// One SSE client. Writes never wait: a client whose unsent bytes pass the buffer limit is dropped
// (it reconnects with Last-Event-ID and misses nothing), so a slow reader never slows the work.
// Idle streams get a comment line every heartbeat so proxies keep them open.
import type { ServerResponse } from 'node:http';
import type { EventLog, StoredEvent } from '../state/event-log.js';

export interface SseOptions {
  bufferLimit: number;
  heartbeatMs: number;
}

export function formatEvent(e: StoredEvent): string {
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ ...e.data, at: e.at })}\n\n`;
}

export class SseClient {
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly closers: (() => void)[] = [];
  private replayBacklog = 0;
  /** Why the stream ended: "done", "client_gone" or "dropped_slow_client". */
  endReason = '';

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SseOptions,
  ) {}

  open(extraHeaders: Record<string, string> = {}): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // nginx and similar proxies: pass events through at once.
      'x-accel-buffering': 'no',
      ...extraHeaders,
    });
    this.res.flushHeaders();
    this.res.socket?.setNoDelay(true);
    this.res.on('close', () => this.finish('client_gone'));
    if (this.options.heartbeatMs > 0) {
      this.timer = setInterval(() => this.write(': heartbeat\n\n'), this.options.heartbeatMs);
      this.timer.unref();
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Called when the stream ends for any reason. */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closers.push(fn);
  }

  private write(text: string): void {
    if (this.closed) return;
    if (this.res.writableLength > this.options.bufferLimit + this.replayBacklog) {
      this.finish('dropped_slow_client');
      this.res.destroy();
      return;
    }
    this.res.write(text);
  }

  send(e: StoredEvent): void {
    this.write(formatEvent(e));
  }

  /**
   * A replay is written at once (it is on disk already, so it is bounded by the log): the buffer
   * limit applies on top of it until the socket has drained it.
   */
  replay(events: StoredEvent[]): void {
    if (this.closed || events.length === 0) return;
    let ok = true;
    for (const e of events) ok = this.res.write(formatEvent(e));
    this.replayBacklog = this.res.writableLength;
    if (!ok) this.res.once('drain', () => (this.replayBacklog = 0));
    else this.replayBacklog = 0;
  }

  /** Ends the stream after what was written. */
  end(reason = 'done'): void {
    if (this.closed) return;
    this.finish(reason);
    this.res.end();
  }

  private finish(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.endReason = reason;
    if (this.timer) clearInterval(this.timer);
    for (const fn of this.closers.splice(0)) fn();
  }
}

/**
 * Streams a log to a client: what came after `afterId`, then live events, until `isLast` says an
 * event ends the stream, or at once after the replay when `idle()` says nothing more will come.
 */
export function pipeLog(
  client: SseClient,
  log: EventLog,
  afterId: number,
  isLast: (e: StoredEvent) => boolean,
  idle: () => boolean,
  remote = false,
): void {
  let ended = false;
  // One follower for the replay and what comes after: events in id order, none twice, none lost.
  const unsubscribe = log.follow(
    afterId,
    (e) => {
      if (client.isClosed || ended) return;
      client.send(e);
      if (isLast(e)) {
        ended = true;
        queueMicrotask(() => client.end());
      }
    },
    {
      remote,
      onReplay: (past) => {
        if (client.isClosed || ended) return;
        const lastIndex = past.findIndex(isLast);
        client.replay(lastIndex >= 0 ? past.slice(0, lastIndex + 1) : past);
        if (lastIndex >= 0 || idle()) {
          ended = true;
          client.end();
        }
      },
    },
  );
  client.onClose(unsubscribe);
}

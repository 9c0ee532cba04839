// Running work per account (issue 19, defect 2): turns and task commands count from their start
// until their agent or child has stopped, not while a client holds a stream, so clients that
// connect and hang up cannot pile agents up. Past server.max_running_per_account a request waits
// in the account's queue (server.max_queued_per_account deep, server.queue_timeout long); past the
// queue, or after the wait, it is 429 with Retry-After.
import { HttpError } from './http.js';

interface Waiter {
  grant(release: () => void): void;
  fail(error: HttpError): void;
}

export interface WorkLimits {
  maxRunning: number;
  maxQueued: number;
  queueTimeoutMs: number;
}

export class WorkLimiter {
  private readonly running = new Map<string, number>();
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly limits: WorkLimits) {}

  /**
   * A slot for one piece of work; call the returned release once it has stopped. `aborted` takes
   * a waiting request out of the queue (its client went away).
   */
  acquire(account: string, aborted?: AbortSignal): Promise<() => void> {
    const n = this.running.get(account) ?? 0;
    if (n < this.limits.maxRunning) return Promise.resolve(this.take(account));
    const queue = this.queues.get(account) ?? [];
    if (queue.length >= this.limits.maxQueued) return Promise.reject(this.busy(account, n, 'and its queue is full'));
    return new Promise((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        aborted?.removeEventListener('abort', onAbort);
        const q = this.queues.get(account) ?? [];
        const i = q.indexOf(waiter);
        if (i >= 0) q.splice(i, 1);
        if (q.length === 0) this.queues.delete(account);
      };
      const waiter: Waiter = {
        grant: (release) => {
          leave();
          resolve(release);
        },
        fail: (error) => {
          leave();
          reject(error);
        },
      };
      const onAbort = () => waiter.fail(new HttpError(499, 'client_gone', 'the client went away while its request waited'));
      const timer = setTimeout(
        () =>
          waiter.fail(
            this.busy(
              account,
              this.running.get(account) ?? 0,
              `and none finished within ${this.limits.queueTimeoutMs} ms (server.queue_timeout)`,
            ),
          ),
        this.limits.queueTimeoutMs,
      );
      timer.unref();
      aborted?.addEventListener('abort', onAbort, { once: true });
      queue.push(waiter);
      this.queues.set(account, queue);
    });
  }

  private take(account: string): () => void {
    this.running.set(account, (this.running.get(account) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queues.get(account)?.[0];
      // The slot passes straight to the next request waiting: no newcomer slips in between.
      if (next) next.grant(this.handOver(account));
      else {
        const left = (this.running.get(account) ?? 1) - 1;
        if (left <= 0) this.running.delete(account);
        else this.running.set(account, left);
      }
    };
  }

  /** The released slot, kept counted, for the next waiter. */
  private handOver(account: string): () => void {
    this.running.set(account, (this.running.get(account) ?? 1) - 1);
    return this.take(account);
  }

  private busy(account: string, n: number, why: string): HttpError {
    return new HttpError(
      429,
      'too_many_running',
      `account ${account} already runs ${n} turns and tasks (server.max_running_per_account = ${this.limits.maxRunning}) ${why}`,
      { retry_after_s: 5 },
    );
  }

  runningOf(account: string): number {
    return this.running.get(account) ?? 0;
  }

  /** Requests waiting in every account's queue (the metrics' queue depth). */
  queued(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }
}

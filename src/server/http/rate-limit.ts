// Requests per second per account (server.requests_per_second): a token bucket per account that
// holds twice the rate, so a page loading a few lists at once is not refused. Past it: 429 with
// Retry-After saying when the next request would pass.
import { HttpError } from './http.js';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one request from the account's bucket, or throws 429. A rate of 0 never limits. */
  take(account: string): void {
    if (this.perSecond <= 0) return;
    const capacity = this.perSecond * 2;
    const t = this.now();
    const b = this.buckets.get(account) ?? { tokens: capacity, at: t };
    b.tokens = Math.min(capacity, b.tokens + ((t - b.at) / 1000) * this.perSecond);
    b.at = t;
    this.buckets.set(account, b);
    if (b.tokens < 1) {
      const retryAfter = (1 - b.tokens) / this.perSecond;
      throw new HttpError(
        429,
        'rate_limited',
        `too many requests for this account: at most ${this.perSecond} a second (bursts of ${capacity})`,
        { retryAfter },
      );
    }
    b.tokens -= 1;
    // Full buckets are forgotten, so the map holds only accounts that are busy now.
    if (this.buckets.size > 10_000) {
      for (const [k, v] of this.buckets) if (v.tokens + ((t - v.at) / 1000) * this.perSecond >= capacity) this.buckets.delete(k);
    }
  }
}

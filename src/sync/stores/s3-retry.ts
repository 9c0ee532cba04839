// Retries of S3 requests: exponential backoff with full jitter (a random wait up to 100 ms × 2^n,
// at most 5 s), for the failures that may pass: throttling, 500, 502, 503, 504, timeouts and
// broken connections (a 4xx or a 501 is an answer: sending it again changes nothing). How many: `sync.retries` (default 10, as
// rclone's low-level retries), or AWS_MAX_ATTEMPTS when set (the AWS convention: attempts, not
// retries). The SDK's own standard strategy also keeps a retry quota that a long sync against a
// flaky server exhausts (500 "retry tokens", 5 per retry): past it, every failure is final.
// Requests are idempotent (a content's key is its hash), so sending one again is always safe.
import type { RetryErrorInfo, RetryStrategyV2, RetryToken } from '@smithy/types';

const BASE_DELAY_MS = 100;
const MAX_DELAY_MS = 5_000;

/** Attempts per request: AWS_MAX_ATTEMPTS when it is a whole number ≥ 1, else `retries` + 1. */
export function attemptsFrom(retries: number, env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = env['AWS_MAX_ATTEMPTS']?.trim();
  if (fromEnv && /^\d{1,3}$/.test(fromEnv) && Number(fromEnv) >= 1) return Number(fromEnv);
  return Math.max(0, Math.floor(retries)) + 1;
}

/** The wait before retry `n` (0 for the first retry): full jitter over an exponential cap. */
export function backoffMs(n: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** n));
}

function token(count: number, delay: number): RetryToken {
  return { getRetryCount: () => count, getRetryDelay: () => delay };
}

export class JitterRetryStrategy implements RetryStrategyV2 {
  readonly mode = 'standard';
  constructor(readonly attempts: number) {}

  async acquireInitialRetryToken(): Promise<RetryToken> {
    return token(0, 0);
  }

  async refreshRetryTokenForRetry(previous: RetryToken, info: RetryErrorInfo): Promise<RetryToken> {
    const count = previous.getRetryCount();
    // As the SDK's own strategies: throttling and transient failures (500, 502, 503, 504, timeouts,
    // resets) pass; a 501 or a 4xx is an answer, not an accident.
    const passing = info.errorType === 'THROTTLING' || info.errorType === 'TRANSIENT';
    if (!passing || count + 1 >= this.attempts) throw info.error ?? new Error('no more retries');
    return token(count + 1, backoffMs(count));
  }

  recordSuccess(): void {}
}

/**
 * Runs `fn` until it succeeds, `attempts` times at most, waiting as above between tries, while
 * `retryable` says the failure may pass (for what the SDK cannot retry: a body cut off midway).
 */
export async function withRetries<T>(attempts: number, fn: () => Promise<T>, retryable: (error: unknown) => boolean): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await fn();
    } catch (error) {
      if (n + 1 >= attempts || !retryable(error)) throw error;
      await new Promise((ok) => setTimeout(ok, backoffMs(n)));
    }
  }
}

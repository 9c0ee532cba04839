// An operation tried again while it fails in a way that passes by itself (another process holds a
// lock for a moment): waits that double from `firstMs` up to `maxMs`, for `waitMs` in all; past
// that, or on any other failure, the failure stands.

export interface RetryWhileOptions {
  waitMs: number;
  firstMs: number;
  maxMs: number;
}

export async function retryWhile<T>(
  run: () => T | Promise<T>,
  passing: (error: unknown) => boolean,
  options: RetryWhileOptions,
): Promise<T> {
  const until = Date.now() + options.waitMs;
  for (let delay = options.firstMs; ; delay = Math.min(delay * 2, options.maxMs)) {
    try {
      return await run();
    } catch (error) {
      if (!passing(error) || Date.now() + delay > until) throw error;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

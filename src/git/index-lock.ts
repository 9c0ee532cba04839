// git refuses at once when another git holds a tree's index.lock. The one atlas meets is most
// often a git that a killed atlas left running (a SIGKILL stops atlas, not its git), still
// finishing while `atlas recover` works in the same tree: it lets go in moments.
import { retryWhile } from '../domain/retry-while.js';

/** What git says when another git holds the index. */
const INDEX_LOCKED = /index\.lock'?: File exists/;

/** How long atlas waits for another git in the tree to finish. */
const INDEX_LOCK_WAIT_MS = 20_000;

/**
 * Runs a git operation again while another git holds the tree's index.lock. A lock still there
 * after the wait fails as before, with git's own message (which names the file).
 */
export function whileIndexLocked<T>(run: () => Promise<T>, waitMs = INDEX_LOCK_WAIT_MS): Promise<T> {
  return retryWhile(run, (error) => INDEX_LOCKED.test(error instanceof Error ? error.message : String(error)), {
    waitMs,
    firstMs: 50,
    maxMs: 1000,
  });
}

// A push and a prune of one tree cannot race into a loss (docs/sync.md#prune-beside-a-push). A push
// that will publish writes a lease (`<tree>/.locks/push-…`) and then looks for prune locks; a prune
// writes its lock (`prune-…`) and then looks for leases. Each writes before it looks, so of two that
// overlap at least one sees the other: a push that sees a prune waits for it to end before it reads
// what it reuses; a prune that sees a push removes nothing. A content a push reuses is so never
// collected before that push's manifest names it. The age of a lock is the store's time of its
// last write (a PUT, never a copy, whose LastModified some servers keep); a lock left by a killed
// process is passed over once it is LOCK_STALE_MS old, and a live one is written again well before.
import { randomBytes } from 'node:crypto';
import type { SyncStore } from '../stores/store.js';

/** A lock not written again for this long was left by a process that is gone. */
export const LOCK_STALE_MS = 60 * 60 * 1000;
/** A push under way writes its lease again this often. */
const REFRESH_MS = 5 * 60 * 1000;
/** How often a push waiting for a prune looks again. */
const POLL_MS = 250;

/**
 * Leases this process took and could not remove (a store that refuses deletes): no push of this
 * process is under way behind them, and its own prune after the push must not wait on them.
 */
const leftBehind = new Set<string>();

function live(locks: readonly { name: string; modifiedMs: number }[], kind: 'push' | 'prune', nowMs: number): string[] {
  return locks
    .filter((l) => l.name.startsWith(`${kind}-`) && !leftBehind.has(l.name) && nowMs - l.modifiedMs < LOCK_STALE_MS)
    .map((l) => l.name);
}

export interface Lease {
  release(): Promise<void>;
}

/**
 * Takes a push's lease on `tree` and returns once no prune of it is under way; `waiting` is told
 * once when it has to wait. Release it once the push's manifest is written (or it failed).
 */
export async function takeLease(store: SyncStore, tree: string, waiting: (text: string) => void = () => undefined): Promise<Lease> {
  const name = `push-${randomBytes(8).toString('hex')}`;
  await store.putLock(tree, name);
  const refresh = setInterval(() => void store.putLock(tree, name).catch(() => undefined), REFRESH_MS);
  refresh.unref();
  const release = async () => {
    clearInterval(refresh);
    await store.removeLock(tree, name).catch(() => leftBehind.add(name));
  };
  try {
    for (let told = false; ; told = true) {
      const prunes = live(await store.listLocks(tree), 'prune', Date.now());
      if (prunes.length === 0) break;
      if (!told) waiting(`waiting for a prune of ${tree} to end (${prunes[0]})`);
      await new Promise((ok) => setTimeout(ok, POLL_MS));
    }
  } catch (error) {
    await release();
    throw error;
  }
  return { release };
}

/**
 * Runs `run` under a prune lock of `tree` when no push holds a lease on it; otherwise runs
 * nothing and returns `busy` with the lease's name.
 */
export async function underPruneLock<T>(store: SyncStore, tree: string, run: () => Promise<T>, busy: (lease: string) => T): Promise<T> {
  const name = `prune-${randomBytes(8).toString('hex')}`;
  await store.putLock(tree, name);
  try {
    const pushes = live(await store.listLocks(tree), 'push', Date.now());
    if (pushes.length > 0) return busy(pushes[0]!);
    return await run();
  } finally {
    await store.removeLock(tree, name).catch(() => undefined);
  }
}

// Taking apart packs that are mostly unused (docs/sync.md#retention): the contents a kept version
// still uses move into blobs of their own (the place a reader looks when a pack is gone), each
// checked against its SHA-256, and only then does the pack go. A pack whose contents do not match
// their hashes is left whole and named: removing it could lose what is left of them.
import { createHash } from 'node:crypto';
import type { RepackPlan } from '../../domain/sync-pack.js';
import { planSpans } from '../../domain/sync-pack.js';
import { mapPool } from '../scan/pool.js';
import type { SyncStore } from '../stores/store.js';

export interface TakenApart {
  /** Packs removed. */
  packs: number;
  /** Contents moved out of them into blobs of their own. */
  moved: number;
  /** Bytes freed: the removed packs' size less what moved out. */
  bytes: number;
  /** A pack that was left whole because its contents did not match, for the report. */
  damaged?: string;
}

export async function takeApart(store: SyncStore, tree: string, apart: RepackPlan['apart'], dryRun: boolean): Promise<TakenApart> {
  const done: TakenApart = { packs: 0, moved: 0, bytes: 0 };
  for (const { pack, used, unused, modifiedMs } of apart) {
    if (dryRun) {
      Object.assign(done, { packs: done.packs + 1, moved: done.moved + used.length, bytes: done.bytes + unused });
      continue;
    }
    const moved = await moveOut(store, tree, pack, used);
    if (moved === 'damaged') {
      done.damaged ??= `pack ${pack} was left whole: its contents do not match their hashes`;
      continue;
    }
    // A push that found this pack (the same contents make the same pack) made it young again and
    // may name all of it: it stays whole. Gone already: another prune took it apart.
    const now = await store.blobModifiedMs(tree, pack);
    if (now === undefined || now > modifiedMs) continue;
    await store.removeBlobs(tree, [pack]);
    Object.assign(done, { packs: done.packs + 1, moved: done.moved + moved, bytes: done.bytes + unused });
  }
  return done;
}

/** Stores each used content of `pack` as a blob of its own; how many, or 'damaged'. */
async function moveOut(
  store: SyncStore,
  tree: string,
  pack: string,
  used: RepackPlan['apart'][number]['used'],
): Promise<number | 'damaged'> {
  let damaged = false;
  let moved = 0;
  await mapPool(planSpans(used.map((c) => ({ ...c, pack }))), 2, async (span) => {
    const body = await store.readPackRange(tree, pack, span.start, span.end - span.start);
    if (body === undefined) return; // removed meanwhile by another prune, which moved them first
    await mapPool(span.entries, 8, async (c) => {
      const bytes = body.subarray(c.offset - span.start, c.offset - span.start + c.size);
      if (bytes.length !== c.size || createHash('sha256').update(bytes).digest('hex') !== c.sha256) {
        damaged = true;
        return;
      }
      await store.putBytes(tree, bytes);
      moved++;
    });
  });
  return damaged ? 'damaged' : moved;
}

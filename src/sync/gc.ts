// Garbage collection of a tree's blobs, after its old versions were removed (docs/sync.md#retention):
// what no remaining version references goes, once past the grace period. A remaining version whose
// manifest cannot be read (damaged, or from a newer atlas) stops the collection: what it references
// is unknown, and a blob removed wrongly is data lost.
import type { BlobCollection } from '../domain/sync-retention.js';
import { planBlobCollection } from '../domain/sync-retention.js';
import { parseStateFile } from '../domain/sync-state.js';
import { mapPool } from './pool.js';
import type { SyncStore } from './store.js';

export interface CollectedBlobs {
  removed: number;
  bytes: number;
  /** Unreferenced but younger than the grace period: a push may be about to reference them. */
  young: number;
  /** Why nothing was collected, when nothing could be. */
  skipped?: string;
}

/** Removes (or, in a dry run, counts) the blobs none of `remaining` references. */
export async function collectBlobs(store: SyncStore, tree: string, remaining: readonly string[], nowMs: number, dryRun: boolean): Promise<CollectedBlobs> {
  const referenced = new Set<string>();
  // A manifest naming contents by reference uses its base's blobs: the base must be read too.
  const read = new Set<string>();
  const bases = new Map<string, string>();
  let unreadable: string | undefined;
  await mapPool(remaining, 4, async (version) => {
    const text = await store.readState(tree, version);
    if (text === undefined) return; // incomplete: a manifest is written last, so it references nothing yet
    const parsed = parseStateFile(text);
    if (!parsed.ok) {
      unreadable ??= `version ${version} ${parsed.kind === 'newer' ? 'was written by a newer atlas' : `has a corrupt .sandbox-state (${parsed.problem})`}`;
      return;
    }
    read.add(version);
    if (parsed.state.sha256_from !== undefined) bases.set(version, parsed.state.sha256_from);
    for (const f of parsed.state.files) if (f.sha256 !== undefined) referenced.add(f.sha256);
  });
  for (const [version, base] of bases) if (!read.has(base)) unreadable ??= `version ${version} names its contents by reference to version ${base}, which is gone`;
  if (unreadable) return { removed: 0, bytes: 0, young: 0, skipped: `no blob was removed: ${unreadable}, so what it uses is unknown` };
  const plan: BlobCollection = planBlobCollection(await store.listBlobs(tree), referenced, nowMs);
  if (!dryRun) {
    await store.removeBlobs(tree, plan.remove);
    await store.removeStaleUploads(tree, nowMs);
  }
  return { removed: plan.remove.length, bytes: plan.bytes, young: plan.young };
}

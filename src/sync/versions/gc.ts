// Garbage collection of a tree's blobs, after its old versions were removed (docs/sync.md#retention):
// what no remaining version references goes, once past the grace period. A remaining version whose
// manifest cannot be read (damaged, or from a newer atlas) stops the collection: what it references
// is unknown, and a blob removed wrongly is data lost.

import type { PackedContent } from '../../domain/sync-pack.js';
import { planRepack } from '../../domain/sync-pack.js';
import type { BlobCollection } from '../../domain/sync-retention.js';
import { BLOB_GRACE_SECONDS, planBlobCollection } from '../../domain/sync-retention.js';
import { mapPool } from '../scan/pool.js';
import type { SyncStore } from '../stores/store.js';
import { takeApart } from './repack.js';
import { readManifest } from './versions.js';

export interface CollectedBlobs {
  removed: number;
  bytes: number;
  /** Unreferenced but younger than the grace period: a push may be about to reference them. */
  young: number;
  /** Why nothing was collected, when nothing could be. */
  skipped?: string;
  /**
   * Packs (docs/sync.md#packs): those taken apart (counted in `removed`, their unused bytes in
   * `bytes`), the contents moved out of them, and unused bytes left in packs still mostly used.
   */
  packs?: { taken_apart: number; moved: number; unused_kept: number };
  /** A pack left whole because its contents do not match their hashes. */
  damaged?: string;
}

/** Removes (or, in a dry run, counts) the blobs none of `remaining` references. */
export async function collectBlobs(
  store: SyncStore,
  tree: string,
  remaining: readonly string[],
  nowMs: number,
  dryRun: boolean,
): Promise<CollectedBlobs> {
  const referenced = new Set<string>();
  const uses = new Map<string, Map<number, PackedContent>>();
  // A manifest naming contents by reference uses its base's blobs: the base must be read too.
  const read = new Set<string>();
  const bases = new Map<string, string>();
  let unreadable: string | undefined;
  await mapPool(remaining, 4, async (version) => {
    const parsed = await readManifest(store, tree, version);
    if (parsed === undefined) return; // incomplete: a manifest is written last, so it references nothing yet
    if (!parsed.ok) {
      unreadable ??= `version ${version} ${parsed.kind === 'newer' ? 'was written by a newer atlas' : `has a corrupt .sandbox-state (${parsed.problem})`}`;
      return;
    }
    read.add(version);
    if (parsed.state.sha256_from !== undefined) bases.set(version, parsed.state.sha256_from);
    for (const f of parsed.state.files) {
      if (f.sha256 !== undefined) referenced.add(f.sha256);
      if (f.pack === undefined) continue;
      // A pack is a blob too; which of its bytes are used decides whether it is taken apart.
      referenced.add(f.pack);
      const contents = uses.get(f.pack) ?? new Map<number, PackedContent>();
      contents.set(f.offset!, { offset: f.offset!, size: f.size, sha256: f.sha256! });
      uses.set(f.pack, contents);
    }
  });
  for (const [version, base] of bases)
    if (!read.has(base)) unreadable ??= `version ${version} names its contents by reference to version ${base}, which is gone`;
  if (unreadable) return { removed: 0, bytes: 0, young: 0, skipped: `no blob was removed: ${unreadable}, so what it uses is unknown` };
  const blobs = await store.listBlobs(tree);
  const plan: BlobCollection = planBlobCollection(blobs, referenced, nowMs);
  if (!dryRun) {
    await store.removeBlobs(tree, plan.remove);
    await store.removeStaleUploads(tree, nowMs);
  }
  const repack = planRepack(blobs, uses, nowMs, BLOB_GRACE_SECONDS);
  const apart = await takeApart(store, tree, repack.apart, dryRun);
  return {
    removed: plan.remove.length + apart.packs,
    bytes: plan.bytes + apart.bytes,
    young: plan.young,
    packs: { taken_apart: apart.packs, moved: apart.moved, unused_kept: repack.unusedKept },
    ...(apart.damaged ? { damaged: apart.damaged } : {}),
  };
}

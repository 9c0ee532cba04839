// Writing a stored version's entries into a folder, for a pull and for an export: each file from
// its blob, from its pack (neighbours in one ranged read, docs/sync.md#packs) or, for a version in
// the old layout, from the version itself, into a verified temp file beside its target; each link
// (the caller kept only links that stay inside), then the empty folders. Everything is staged
// (transfer/staging.ts): the caller renames it into place once every content is checked.

import { planSpans, SPAN_MAX } from '../../domain/sync-pack.js';
import type { FileEntry, StateFile } from '../../domain/sync-state.js';
import type { Progress } from '../report/progress.js';
import { BufferPool } from '../scan/buffer-pool.js';
import { mapPool } from '../scan/pool.js';
import type { Stage } from '../scan/safe-fs.js';
import { ensureParents, stageLink, stageVerified } from '../scan/safe-fs.js';
import { streamToNewFile } from '../scan/stream-file.js';
import type { SyncStore } from '../stores/store.js';

export interface Source {
  store: SyncStore;
  tree: string;
  version: string;
  /** For messages: "version V of T (location)". */
  where: string;
}

/** Ranged reads of packs at once (each at most SPAN_MAX bytes in memory). */
const SPANS_AT_ONCE = 4;

/** Stages `entries` and makes the state's empty folders under `root`; returns the bytes received. */
export async function writeEntries(
  root: string,
  source: Source,
  entries: readonly FileEntry[],
  dirs: StateFile['dirs'],
  progress: Progress,
  stage: Stage,
): Promise<number> {
  const { store, tree, version, where } = source;
  let bytes = 0;
  progress.start(
    `pull ${tree}`,
    entries.length,
    entries.reduce((n, f) => n + f.size, 0),
  );
  const write = async (entry: FileEntry, fetch: (temp: string) => ReturnType<SyncStore['getBlob']>) => {
    const got = await stageVerified(root, entry, fetch, `${entry.path} in ${where}`, stage);
    bytes += got;
    progress.advance(got);
  };
  try {
    const packed = entries.filter((e) => e.pack !== undefined && e.link === undefined);
    const alone = entries.filter((e) => e.pack === undefined || e.link !== undefined);
    // A buffer per read under way, used again by the next: a new one per read left hundreds of
    // them (2 MiB each) to the collector at once.
    const buffers = new BufferPool(SPAN_MAX);
    await mapPool(planSpans(packed), SPANS_AT_ONCE, async (span) => {
      const length = span.end - span.start;
      const readSpan = async (into?: Buffer) => {
        const body = await store.readPackRange(tree, span.pack, span.start, length, into);
        await mapPool(span.entries, 8, async (entry) => {
          const at = entry.offset! - span.start;
          // A pack that pruning took apart: what a kept version still used is now a blob of its own.
          await write(entry, (temp) =>
            body ? streamToNewFile([body.subarray(at, at + entry.size)], temp) : store.getBlob(tree, entry.sha256!, temp),
          );
        });
      };
      await (length <= SPAN_MAX ? buffers.with(readSpan) : readSpan());
    });
    await mapPool(alone, 8, async (entry) => {
      if (entry.link !== undefined) return await stageLink(root, entry, stage);
      await write(entry, (temp) =>
        entry.sha256 !== undefined ? store.getBlob(tree, entry.sha256, temp) : store.download(tree, version, entry.path, temp),
      );
    });
    for (const dir of dirs ?? []) await ensureParents(root, `${dir}/-`, stage.folders, stage.created);
  } finally {
    progress.finish();
  }
  return bytes;
}

// Writing a stored version's entries into a folder, for a pull and for an export: each file from
// its blob, from its pack (neighbours in one ranged read streamed into their files,
// docs/sync.md#packs) or, for a version in the old layout, from the version itself, into a
// verified temp file beside its target; each link
// (the caller kept only links that stay inside), then the empty folders. Everything is staged
// (transfer/staging.ts): the caller renames it into place once every content is checked.

import { planSpans } from '../../domain/sync-pack.js';
import type { FileEntry, StateFile } from '../../domain/sync-state.js';
import type { Progress } from '../report/progress.js';
import { mapPool } from '../scan/pool.js';
import type { Stage } from '../scan/safe-fs.js';
import { ensureParents, stageLink, stageVerified } from '../scan/safe-fs.js';
import type { SyncStore } from '../stores/store.js';
import { stageSpan } from './stage-span.js';

export interface Source {
  store: SyncStore;
  tree: string;
  version: string;
  /** For messages: "version V of T (location)". */
  where: string;
}

/** Ranged reads of packs at once (streamed into their files: none is held in memory). */
const SPANS_AT_ONCE = 4;

function* filtered<T>(items: readonly T[], keep: (item: T) => boolean): Generator<T> {
  for (const item of items) if (keep(item)) yield item;
}

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
  const target = {
    root,
    store,
    tree,
    stage,
    describe: (entry: FileEntry) => `${entry.path} in ${where}`,
    staged: (got: number) => {
      bytes += got;
      progress.advance(got);
    },
  };
  const write = async (entry: FileEntry, fetch: (temp: string) => ReturnType<SyncStore['getBlob']>) =>
    target.staged(await stageVerified(root, entry, fetch, target.describe(entry), stage));
  try {
    const inPack = (e: FileEntry) => e.pack !== undefined && e.link === undefined;
    // The spans are planned from the entries as they are walked: no list of every packed entry beside them.
    await mapPool(planSpans(filtered(entries, inPack)), SPANS_AT_ONCE, async (span) => {
      if (await stageSpan(span, target)) return;
      // A pack that pruning took apart: what a kept version still used is now a blob of its own.
      await mapPool(span.entries, 8, (entry) => write(entry, (temp) => store.getBlob(tree, entry.sha256!, temp)));
    });
    await mapPool(
      entries.filter((e) => !inPack(e)),
      8,
      async (entry) => {
        if (entry.link !== undefined) return await stageLink(root, entry, stage);
        await write(entry, (temp) =>
          entry.sha256 !== undefined ? store.getBlob(tree, entry.sha256, temp) : store.download(tree, version, entry.path, temp),
        );
      },
    );
    for (const dir of dirs ?? []) await ensureParents(root, `${dir}/-`, stage.folders, stage.created);
  } finally {
    progress.finish();
  }
  return bytes;
}

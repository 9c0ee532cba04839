// Writing a stored version's entries into a folder, for a pull and for an export: each file from
// its blob (or, for a version in the old layout, from the version itself) through a verified temp
// file, each link (the caller kept only links that stay inside), then the empty folders.
import type { FileEntry, StateFile } from '../domain/sync-state.js';
import { mapPool } from './pool.js';
import type { Progress } from './progress.js';
import { dropTemps, ensureParents, prepareTemps, writeLink, writeVerified } from './safe-fs.js';
import type { SyncStore } from './store.js';

export interface Source {
  store: SyncStore;
  tree: string;
  version: string;
  /** For messages: "version V of T (location)". */
  where: string;
}

/** Writes `entries` and the state's empty folders under `root`; returns the bytes received. */
export async function writeEntries(root: string, source: Source, entries: readonly FileEntry[], dirs: StateFile['dirs'], progress: Progress): Promise<number> {
  const { store, tree, version, where } = source;
  let bytes = 0;
  progress.start(`pull ${tree}`, entries.length, entries.reduce((n, f) => n + f.size, 0));
  const folders = new Map<string, Promise<void>>();
  if (entries.length > 0) await prepareTemps(root);
  try {
    await mapPool(entries, 8, async (entry) => {
      if (entry.link !== undefined) return writeLink(root, entry, folders);
      const fetch = (temp: string) => (entry.sha256 !== undefined ? store.getBlob(tree, entry.sha256, temp) : store.download(tree, version, entry.path, temp));
      const got = await writeVerified(root, entry, fetch, `${entry.path} in ${where}`, folders);
      bytes += got;
      progress.advance(got);
    });
    for (const dir of dirs ?? []) await ensureParents(root, `${dir}/-`, folders);
  } finally {
    progress.finish();
    if (entries.length > 0) await dropTemps(root);
  }
  return bytes;
}

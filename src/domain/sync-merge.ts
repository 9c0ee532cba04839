// The behind-the-store rule (issue 20, docs/sync.md#behind-the-store): a push from a folder whose
// last sync (the base) is older than the store's newest version combines the two at the file
// level. A file changed only here is ours, a file changed only in the store is theirs, a file
// changed on both sides to the same content is either; changed on both sides differently, it is a
// conflict. Pure: the caller supplies the three file lists.
import { sameContent } from './sync-plan.js';
import type { FileEntry } from './sync-state.js';

export interface Merge {
  /** The combined version: ours where we changed, theirs where only they did (ours on conflicts). */
  files: FileEntry[];
  dirs: string[];
  /** Changed here and in the store, differently. */
  conflicts: string[];
  /** Taken from the store's version: changed (or removed) there, not here. */
  fromStore: string[];
}

export function mergeWithStore(
  ours: readonly FileEntry[],
  oursDirs: readonly string[],
  theirs: readonly FileEntry[],
  theirsDirs: readonly string[],
  base: readonly FileEntry[],
  baseDirs: readonly string[],
): Merge {
  const o = new Map(ours.map((f) => [f.path, f]));
  const t = new Map(theirs.map((f) => [f.path, f]));
  const b = new Map(base.map((f) => [f.path, f]));
  const merge: Merge = { files: [], dirs: [], conflicts: [], fromStore: [] };
  for (const path of new Set([...o.keys(), ...t.keys(), ...b.keys()])) {
    const mine = o.get(path);
    const store = t.get(path);
    const was = b.get(path);
    const changedThere = !sameContent(store, was);
    let pick = mine;
    if (changedThere && sameContent(mine, was)) {
      pick = store;
      merge.fromStore.push(path);
    } else if (changedThere && !sameContent(mine, store)) merge.conflicts.push(path);
    if (pick) merge.files.push(pick);
  }
  const filePaths = merge.files.map((f) => `${f.path}/`);
  const added = theirsDirs.filter((d) => !baseDirs.includes(d));
  merge.dirs = [...new Set([...oursDirs, ...added])].filter((d) => !filePaths.some((p) => p.startsWith(`${d}/`))).sort();
  merge.files.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  merge.conflicts.sort();
  merge.fromStore.sort();
  return merge;
}

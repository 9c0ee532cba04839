// At a pull, the folder's own entry stands in for an entry of the version that leaves its SHA-256
// to its base (`sha256_from`) and otherwise says the same of its path (MD5, size, time, mode): one
// object, not two, while the version's 100,000 entries wait for their base. Provisional until the
// base is read: the merge (sync-manifest.ts, streamed or whole) keeps it only when the base gives
// the same content at that path, in the same place; otherwise the version's own entry is made
// again from the same fields and the base's. The comparisons are those of an entry taken in place
// of an equal one as a state is parsed (sync-state-parse.ts): the same fields, the same place. Pure.
import type { FileEntry } from './sync-state.js';

/** Which places of a parsed `files` list hold a stand-in, by the list. */
const marks = new WeakMap<readonly FileEntry[], Uint8Array>();

/** What a parsed entry (or another entry) says of its path besides its content's names and place. */
type OwnFields = { checksum?: unknown; size?: unknown; modified_at?: unknown; mtime_ns?: unknown; mode?: unknown };

/** Whether `held` (the folder's entry at its path) says the same as `f` of its MD5, size, time and mode. */
export function sameOwnFields(held: FileEntry, f: OwnFields): boolean {
  return (
    held.checksum === f.checksum &&
    held.size === f.size &&
    held.modified_at === f.modified_at &&
    held.mtime_ns === f.mtime_ns &&
    held.mode === f.mode
  );
}

/**
 * Whether `held` is in the same place in a pack as `pack`/`offset` (both absent: a blob of its
 * own), given that place when it has none (a folder's own state never says where contents are).
 */
export function takePlace(held: FileEntry, pack: string | undefined, offset: number | undefined): boolean {
  if (held.pack === undefined && pack !== undefined) {
    held.pack = pack;
    held.offset = offset!;
    return true;
  }
  return held.pack === pack && held.offset === offset;
}

/** Whether `held` (the folder's entry at its path) may stand in for `f` (a parsed entry without SHA-256). */
export function mayStandIn(held: FileEntry, f: OwnFields): boolean {
  return held.sha256 !== undefined && held.link === undefined && sameOwnFields(held, f);
}

/** Records that `files[index]` is a stand-in. */
export function markStandIn(files: readonly FileEntry[], index: number): void {
  let bits = marks.get(files);
  if (bits === undefined || index >= bits.length) {
    const grown = new Uint8Array(Math.max(1024, 2 * (index + 1)));
    if (bits !== undefined) grown.set(bits);
    bits = grown;
    marks.set(files, bits);
  }
  bits[index] = 1;
}

export function isStandIn(files: readonly FileEntry[], index: number): boolean {
  return marks.get(files)?.[index] === 1;
}

/**
 * The version's entry for the stand-in `held` once the base's entry at its path (`there`) is read:
 * `held` itself when the base completes the version's entry into the same (taking the base's place
 * in a pack when `held` has none), else the version's own entry made anew. Undefined when the base
 * has no content of that MD5 and size there (the version is damaged).
 */
export function confirmStandIn(held: FileEntry, there: FileEntry | undefined): FileEntry | undefined {
  if (there?.sha256 === undefined || there.checksum !== held.checksum || there.size !== held.size) return undefined;
  if (there.sha256 === held.sha256 && takePlace(held, there.pack, there.offset)) return held;
  return {
    path: held.path,
    checksum: held.checksum,
    size: held.size,
    modified_at: held.modified_at,
    mtime_ns: held.mtime_ns,
    mode: held.mode,
    sha256: there.sha256,
    pack: there.pack,
    offset: there.pack !== undefined ? there.offset : undefined,
  };
}

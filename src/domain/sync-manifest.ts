// Manifests that name their contents by reference (docs/sync.md#the-state-file-sandbox-state).
// Every version's `.sandbox-state` lists every file with the seed's fields (path, MD5, size,
// mtime); the SHA-256 that names an unchanged file's blob may instead be left to an earlier full
// manifest, `sha256_from`: on the wire, a SHA-256 is 64 hex digits that do not compress, most of
// what a version costs when few files changed. Pure: the caller reads the manifests.
import type { FileEntry, StateFile } from './sync-state.js';
import { pairByPath } from './sync-state.js';

/** Below this many entries a manifest is always written in full: a reference saves little. */
export const REFER_FROM = 256;

/** A manifest refers to its base only when at most this share of its entries carries its own SHA-256. */
export const REFER_MAX_SHARE = 0.2;

/** A stored version as read: resolved, with what its manifest left to its base (for the next push). */
export interface ReferenceInfo {
  /** The full manifest the version's entries refer to. */
  base: string;
  /** The entries whose SHA-256 came from the base (the base has that content at that path). */
  byReference: ReadonlySet<FileEntry>;
}

/**
 * Fills in the SHA-256 of the entries of `state` (version `version`) that leave it to their base,
 * or says why the manifest is damaged. The base must be older and full (no chains), and hold at the
 * same path a blob of the same MD5 and size.
 */
export function resolveReferences(
  state: StateFile,
  version: string,
  base: StateFile,
): { ok: true; state: StateFile; byReference: Set<FileEntry> } | { ok: false; problem: string } {
  const from = state.sha256_from!;
  if (!(Number(from) < Number(version))) return { ok: false, problem: `refers to version ${from}, which is not older` };
  if (base.sha256_from !== undefined)
    return { ok: false, problem: `refers to version ${from}, which itself refers to ${base.sha256_from}` };
  const byReference = new Set<FileEntry>();
  let problem: string | undefined;
  pairByPath(state.files, base.files, (f, there, at) => {
    if (problem !== undefined || f.sha256 !== undefined || f.link !== undefined) return;
    if (there?.sha256 === undefined || there.checksum !== f.checksum || there.size !== f.size) {
      problem = `files[${at}] (${JSON.stringify(f.path)}) has no sha256, and version ${from} has no content of that MD5 and size there`;
      return;
    }
    f.sha256 = there.sha256;
    // Where the base keeps that content (a pack) goes with it.
    if (there.pack !== undefined) {
      f.pack = there.pack;
      f.offset = there.offset!;
    }
    byReference.add(f);
  });
  if (problem !== undefined) return { ok: false, problem };
  const resolved: StateFile = { ...state, files: state.files };
  delete resolved.sha256_from;
  return { ok: true, state: resolved, byReference };
}

/**
 * How a new manifest over `latest` may be written: the base to refer to and which of `files` leave
 * their SHA-256 to it, or undefined for a full manifest (a small tree, no content-addressed base,
 * or too much changed since the base: then this version becomes the next base).
 */
export function planReferences(
  files: readonly FileEntry[],
  latest: { version: string; state: StateFile; references?: ReferenceInfo } | undefined,
): { base: string; omit: (entry: FileEntry) => boolean } | undefined {
  if (!latest || files.length < REFER_FROM) return undefined;
  const base = latest.references?.base ?? latest.version;
  // What the base holds at a path: the latest's entry, when the latest is the base or left that
  // entry's SHA-256 to the base.
  const inBase = (f: FileEntry) => f.sha256 !== undefined && (latest.references === undefined || latest.references.byReference.has(f));
  const omitted = new Set<FileEntry>();
  let carried = 0;
  pairByPath(files, latest.state.files, (f, there) => {
    if (f.sha256 === undefined) return;
    if (there && inBase(there) && there.sha256 === f.sha256 && there.checksum === f.checksum && there.size === f.size) omitted.add(f);
    else carried++;
  });
  if (carried > files.length * REFER_MAX_SHARE) return undefined;
  return { base, omit: (entry) => omitted.has(entry) };
}

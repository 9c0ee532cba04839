// Manifests that name their contents by reference (docs/sync.md#the-state-file-sandbox-state).
// Every version's `.sandbox-state` lists every file with the seed's fields (path, MD5, size,
// mtime); the SHA-256 that names an unchanged file's blob may instead be left to an earlier full
// manifest, `sha256_from`: on the wire, a SHA-256 is 64 hex digits that do not compress, most of
// what a version costs when few files changed. Pure: the caller reads the manifests.
import { confirmStandIn, isStandIn } from './sync-stand-in.js';
import type { FileEntry, StateFile } from './sync-state.js';
import { pairByPath, strictlyInPathOrder } from './sync-state.js';
import { OrderedPathCheck } from './sync-unsafe.js';

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

type Resolved<R = Set<FileEntry>> = { ok: true; state: StateFile; byReference: R } | { ok: false; problem: string };

/**
 * Fills in the SHA-256 of the entries of `state` (version `version`) that leave it to their base,
 * or says why the manifest is damaged. The base must be older and full (no chains), and hold at the
 * same path a blob of the same MD5 and size.
 */
export function resolveReferences(state: StateFile, version: string, base: StateFile): Resolved {
  const byReference = new Set<FileEntry>();
  let problem = baseProblem(state, version, base);
  if (problem === undefined)
    pairByPath(state.files, base.files, (_f, there, at) => {
      problem ??= completeFromBase(state.files, at, there, state.sha256_from!, byReference);
    });
  return resolved(state, byReference, problem);
}

/**
 * `resolveReferences` with the base's entries given one at a time as its manifest is read, in path
 * order, merged with the entries of `state` (in path order too) as they come: the base's 100,000
 * entries are never held beside the version's own. Its paths are checked on the way (`unsafe`).
 * A base out of path order (written by hand) turns `inOrder` off, with some entries of `state`
 * possibly filled in already: the caller then reads both again, whole, for `resolveReferences`.
 * Without `byReference` (a pull, an export), which entries the base gave is not recorded. The
 * folder's own entries standing in for the version's (sync-stand-in.ts) are confirmed or replaced.
 */
export class ReferenceMerge {
  /** False when either list is out of path order: the merge stops. */
  inOrder: boolean;
  /** The checks of the base's paths (`unsafeEntries`), so far. */
  readonly unsafe = new OrderedPathCheck();
  /** The next entry of `state` not yet paired, and the base's path before. */
  private at = 0;
  private last: string | undefined;
  private problem: string | undefined;

  constructor(
    private readonly state: StateFile,
    private readonly version: string,
    private readonly byReference: Set<FileEntry> | undefined,
  ) {
    this.inOrder = strictlyInPathOrder(state.files);
  }

  /** The base's next entry. */
  take(there: FileEntry): void {
    if (!this.inOrder) return;
    if (this.last !== undefined && there.path <= this.last) {
      this.inOrder = false;
      return;
    }
    this.last = there.path;
    this.unsafe.add(there.path);
    const files = this.state.files;
    while (this.at < files.length && files[this.at]!.path < there.path) this.pair(undefined);
    if (files[this.at]?.path === there.path) this.pair(there);
  }

  /** The version resolved, once the base (`base`: its fields besides the entries) is read whole. */
  finish(base: StateFile): Resolved<Set<FileEntry> | undefined> {
    while (this.at < this.state.files.length) this.pair(undefined);
    return resolved(this.state, this.byReference, baseProblem(this.state, this.version, base) ?? this.problem);
  }

  private pair(there: FileEntry | undefined): void {
    this.problem ??= completeFromBase(this.state.files, this.at, there, this.state.sha256_from!, this.byReference);
    this.at++;
  }
}

/** Why `state` may not refer to `base` at all: a base not older, or one that refers itself. */
function baseProblem(state: StateFile, version: string, base: StateFile): string | undefined {
  const from = state.sha256_from!;
  if (!(Number(from) < Number(version))) return `refers to version ${from}, which is not older`;
  if (base.sha256_from !== undefined) return `refers to version ${from}, which itself refers to ${base.sha256_from}`;
  return undefined;
}

/**
 * Gives `files[at]` the base's content at its path (`there`) when it leaves its SHA-256 to the
 * base (a stand-in is confirmed or replaced by the version's own entry), or says why it cannot.
 */
function completeFromBase(
  files: FileEntry[],
  at: number,
  there: FileEntry | undefined,
  from: string,
  byReference: Set<FileEntry> | undefined,
): string | undefined {
  const f = files[at]!;
  if (isStandIn(files, at)) {
    const confirmed = confirmStandIn(f, there);
    if (confirmed === undefined) return noContent(at, f, from);
    files[at] = confirmed;
    byReference?.add(confirmed);
    return undefined;
  }
  if (f.sha256 !== undefined || f.link !== undefined) return undefined;
  if (there?.sha256 === undefined || there.checksum !== f.checksum || there.size !== f.size) return noContent(at, f, from);
  f.sha256 = there.sha256;
  // Where the base keeps that content (a pack) goes with it.
  if (there.pack !== undefined) {
    f.pack = there.pack;
    f.offset = there.offset!;
  }
  byReference?.add(f);
  return undefined;
}

function noContent(at: number, f: FileEntry, from: string): string {
  return `files[${at}] (${JSON.stringify(f.path)}) has no sha256, and version ${from} has no content of that MD5 and size there`;
}

function resolved<R>(state: StateFile, byReference: R, problem: string | undefined): Resolved<R> {
  if (problem !== undefined) return { ok: false, problem };
  const out: StateFile = { ...state, files: state.files };
  delete out.sha256_from;
  return { ok: true, state: out, byReference };
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

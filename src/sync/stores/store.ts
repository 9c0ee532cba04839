// A store holds versions of trees. A tree is a workspace (`<workspace>`) or a task's own folder
// (`<workspace>/.tasks/<task-id>`). Each content is stored once, in the tree's blob area
// (`<tree>/.blobs/ab/<sha256>`), and a version is its manifest, `<tree>/<version>/.sandbox-state`,
// written last: a version without one is incomplete and never read. Versions stored before
// content addressing hold their files under the version (`<tree>/<version>/<path>`) and still pull.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { isStoredTreeName, isVersionName } from '../../domain/sync-retention.js';
import type { Pieces } from '../scan/body-pieces.js';
import type { Received, Written } from '../scan/stream-file.js';

export interface SyncStore {
  /** Where it is, for messages: a folder path or s3://bucket/prefix. */
  readonly location: string;
  readonly kind: 'dir' | 's3';
  /**
   * Fails with a clear message when the store cannot be used (credentials, permissions, missing
   * bucket). `listing: false` leaves out the request that proves the bucket answers, for a caller
   * whose next request is a listing anyway (a push: one request fewer, the same message).
   * `reading: true` asks only what a reader needs: a folder store shared read-only is readable.
   */
  checkAccess(options?: { listing?: boolean; reading?: boolean }): Promise<void>;
  /** Every version name under a tree, complete or not, oldest first. */
  listVersionNames(tree: string): Promise<string[]>;
  /** Records that a task's folder is stored under `workspace` (`<prefix>/.tasks/<task-id>.<workspace>`). */
  putTaskIndex(taskId: string, workspace: string): Promise<void>;
  /** Every task the store holds, from that index. */
  listTaskIndex(): Promise<StoredTask[]>;
  /**
   * The version's `.sandbox-state` text in pieces as it is read (a 100,000-file manifest is never
   * held whole), or undefined when the version is incomplete or absent. Each call reads it anew.
   */
  readState(tree: string, version: string): Promise<AsyncIterable<string> | undefined>;
  /** Writes one file of a version in the old layout to `dest` (a new file), reporting what arrived. */
  download(tree: string, version: string, path: string, dest: string): Promise<Received>;
  /** Writes one blob to `dest` (a new file), reporting what arrived: its size and SHA-256 (no MD5). */
  getBlob(tree: string, sha256: string, dest: string): Promise<Written>;
  /**
   * Which of `wanted` the tree's blob area is known to hold (contents a killed push left, which
   * then need not be sent). A store may leave out what costs more to ask about than to send.
   */
  findBlobs(tree: string, wanted: readonly { sha256: string; size: number }[]): Promise<Set<string>>;
  /**
   * Stores a local file as the blob of its content. The key is the SHA-256 of the bytes actually
   * read (reported back): a file that changed since it was hashed is stored under its new hash,
   * never under a stale one. A blob appears whole or not at all.
   */
  putBlob(tree: string, localFile: string): Promise<Received>;
  /**
   * Stores bytes (a pack of small contents, docs/sync.md#packs, or one content) as the blob of their
   * SHA-256; that hash. `sha256`: the caller's hash of these very bytes, not computed again.
   */
  putBytes(tree: string, body: Buffer, sha256?: string): Promise<string>;
  /**
   * `length` bytes of a pack from `start` (fewer when the pack is shorter than that: the caller's
   * check of each content against its hashes then says which file is damaged); undefined when the
   * pack is gone (pruning moved what was still used out of it, into blobs of their own). `into`:
   * where to read them (at least `length` bytes; the caller reuses it), else a new buffer.
   */
  readPackRange(tree: string, pack: string, start: number, length: number, into?: Buffer): Promise<Buffer | undefined>;
  /**
   * `length` bytes of a pack from `start` handed to `consume` as they arrive, never held whole (a
   * pull writes each content straight to its file: a read may span a whole pack at no cost in
   * memory); undefined when the pack is gone. The stream ends early when the pack is shorter.
   * `consume` is called again, with the range from its start, when the body is cut off midway (a
   * failure of the stream, never one `consume` throws itself): it must skip what it did already.
   */
  streamPackRange<T>(tree: string, pack: string, start: number, length: number, consume: PackReader<T>): Promise<T | undefined>;
  /**
   * Makes a blob young again (for the grace period of garbage collection) without sending it:
   * a push reusing a blob that no version references yet. False when the blob is gone.
   */
  touchBlob(tree: string, sha256: string): Promise<boolean>;
  /** When a blob was last written or made young again (ms), or undefined when it is gone. */
  blobModifiedMs(tree: string, sha256: string): Promise<number | undefined>;
  /** Every blob of the tree with its size and age (for garbage collection). */
  listBlobs(tree: string): Promise<Map<string, { size: number; modifiedMs: number }>>;
  /** Removes blobs (nothing else); a blob already gone is fine. */
  removeBlobs(tree: string, sha256s: readonly string[]): Promise<void>;
  /** Removes what killed pushes left half-written past the grace period (temp files, multipart uploads). */
  removeStaleUploads(tree: string, nowMs: number): Promise<void>;
  /**
   * Writes a version's manifest (its text, whole or in pieces), which makes the version visible (all
   * its blobs are stored). False, with nothing written, when another push already took that name.
   */
  commitVersion(tree: string, version: string, manifest: string | Iterable<string>): Promise<boolean>;
  /**
   * Removes one version: its `.sandbox-state` first (a version removed halfway reads as incomplete
   * and is never pulled), then everything else under it, and nothing outside it. With `dryRun`,
   * only measures. A version already gone counts as empty.
   */
  removeVersion(tree: string, version: string, options?: { dryRun?: boolean }): Promise<RemovedVersion>;
  /** Writes (or writes again, making it young) a lock of the tree: a push's lease or a prune's lock (versions/locks.ts). */
  putLock(tree: string, name: string): Promise<void>;
  /** The tree's locks, each with when it was last written (ms, the store's clock). */
  listLocks(tree: string): Promise<{ name: string; modifiedMs: number }[]>;
  /** Removes a lock; one already gone is fine. */
  removeLock(tree: string, name: string): Promise<void>;
}

/** What reads a streamed range of a pack (SyncStore.streamPackRange): given its pieces as they arrive. */
export type PackReader<T> = (pieces: Pieces) => Promise<T>;

/** Where a tree's locks are (`<tree>/.locks/<name>`), and what their names look like. */
export const LOCK_AREA = '.locks';
export const LOCK_NAME = /^(push|prune)-[0-9a-f]{16}$/;

export interface RemovedVersion {
  /** Files (objects) under the version, its `.sandbox-state` included. */
  objects: number;
  bytes: number;
  /** It had no `.sandbox-state` (an unfinished push, or a removal that stopped midway). */
  incomplete: boolean;
}

/** Refuses a tree or version name the store would not have made, before any key or path is built. */
export function checkVersionAddress(tree: string, version: string): void {
  if (!isStoredTreeName(tree)) {
    throw new AtlasError(`refusing to remove from tree ${JSON.stringify(tree)}: not a workspace or task folder name atlas stores`, {
      exitCode: EXIT.input,
      hint: 'a tree is <workspace> or <workspace>/.tasks/<task-id>',
    });
  }
  if (!isVersionName(version)) {
    throw new AtlasError(`refusing to remove version ${JSON.stringify(version)} of ${tree}: a version is a unix time (digits only)`, {
      exitCode: EXIT.input,
      hint: 'run `atlas sync versions` to list the stored versions',
    });
  }
}

export interface StoredTask {
  id: string;
  workspace: string;
}

export const TASK_INDEX = '.tasks';

/**
 * Index entries are names, not folders to walk: finding a task costs one listing, and servers
 * whose delimiter listings only see objects one level down (s3rver) find them too.
 */
export function taskIndexName(taskId: string, workspace: string): string {
  return `${taskId}.${workspace}`;
}

export function parseTaskIndexName(name: string): StoredTask | undefined {
  const m = /^(task-\d{8}-\d{6}(?:-\d+)?)\.([A-Za-z0-9][A-Za-z0-9._-]{0,99})$/.exec(name);
  return m ? { id: m[1]!, workspace: m[2]! } : undefined;
}

/** Where a task's own folder is kept in the store. */
export function taskTree(workspace: string, taskId: string): string {
  return `${workspace}/.tasks/${taskId}`;
}

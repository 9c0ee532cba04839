// Sending what a push's version needs and the store lacks (docs/sync.md#packs): contents under
// PACK_BELOW bytes go into packs, a request for hundreds of them; larger ones are blobs of their
// own. The store may hold either already (a killed push sent them): those are not sent again. A
// file that changed since the scan is stored as read, under its new hash, and its entry says so
// (its newer mtime makes the next scan hash it again); another file that had the scanned content
// is then sent itself.
import { hash } from 'node:crypto';
import { closeSync, constants, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { PACK_BELOW, PACK_TARGET, packGroups } from '../../domain/sync-pack.js';
import type { FileEntry } from '../../domain/sync-state.js';
import type { Progress } from '../report/progress.js';
import { BufferPool } from '../scan/buffer-pool.js';
import { mapPool } from '../scan/pool.js';
import type { Received } from '../scan/stream-file.js';
import { readFully } from '../scan/stream-file.js';
import type { SyncStore } from '../stores/store.js';

export interface Sent {
  /** Contents sent (a file read again after it changed counts again). */
  files: number;
  bytes: number;
  /** Entries of files that changed since the scan, as they were sent. */
  changed: FileEntry[];
  /**
   * Files that could not be read as files (gone, a link now, or rewritten while a large one was
   * sent in parts): not sent; the version keeps their previous entry (docs/sync.md#files-changing-during-a-push).
   */
  left: string[];
}

/** Packs being built and sent at once; a push holds this many slabs of SLAB_SIZE in memory. */
const PACKS_IN_FLIGHT = 3;

interface Read {
  /** The entry that names what was read: the scanned one, or its replacement when the file changed. */
  entry: FileEntry;
  got: Received;
  /** The bytes, for a pack; absent when the file grew past PACK_BELOW and was sent as a blob of its own. */
  body?: Buffer;
}

/** Sends `candidates` (one entry per content, none of which the newest version references). */
export async function sendContents(
  store: SyncStore,
  tree: string,
  root: string,
  candidates: readonly FileEntry[],
  all: readonly FileEntry[],
  progress: Progress,
  strict = false,
): Promise<Sent> {
  const large = candidates.filter((f) => f.size >= PACK_BELOW);
  const held = await heldAlready(
    store,
    tree,
    large.map((f) => ({ sha256: f.sha256!, size: f.size })),
  );
  const single = large.filter((f) => !held.has(f.sha256!));
  const small = candidates.filter((f) => f.size < PACK_BELOW);
  const sent: Sent = { files: 0, bytes: 0, changed: [], left: [] };
  progress.start(
    `push ${tree}`,
    single.length + small.length,
    [...single, ...small].reduce((n, f) => n + f.size, 0),
  );
  const readAs = (send: (entry: FileEntry) => Promise<Read>) => (first: FileEntry) => firstHolding(first, all, send, sent, strict);
  const alone = async (entry: FileEntry): Promise<Read> => {
    const got = await store
      .putBlob(tree, local(root, entry))
      .catch((error: unknown) => Promise.reject(changedUnderPush(local(root, entry), error)));
    count(sent, progress, got.bytes);
    return { entry, got };
  };
  await mapPool(single, 8, readAs(alone));
  // Once a pack is sent its bytes are no longer needed, and the next pack is read into the same slab.
  const slabs = new BufferPool(SLAB_SIZE);
  await mapPool(packGroups(small), PACKS_IN_FLIGHT, (group) =>
    slabs.with(async (slab) => {
      const slots = slotsFor(group, slab);
      const readSmall = readAs(async (entry) => {
        const body = readNoFollow(local(root, entry), slots.get(entry));
        // Grown past the pack limit since the scan: a blob of its own, as a large file would be.
        if (body.length >= PACK_BELOW) return alone(entry);
        // The hashes are of the bytes packed. The same SHA-256 and size as the scan's: the same
        // bytes, whose MD5 the scan has (not computed twice); else the MD5 of these bytes.
        const sha256 = hash('sha256', body, 'hex');
        const md5 = sha256 === entry.sha256 && body.length === entry.size ? entry.checksum : hash('md5', body, 'hex');
        return { entry, body, got: { bytes: body.length, md5, sha256 } };
      });
      await sendPack(store, tree, (await mapPool(group, 8, readSmall)).flat(), sent, progress);
    }),
  );
  // 15 MB of slabs otherwise wait for a full collection, beside the manifest the push writes next.
  slabs.release();
  return sent;
}

/**
 * A pack's bytes by the scanned sizes stay under this (it closes once PACK_TARGET is reached, and
 * each content is under PACK_BELOW): one slab of this size holds any pack. A slab per pack, left
 * to the collector, cost 15-20 MB more at the peak of a first push of 100,000 files.
 */
const SLAB_SIZE = PACK_TARGET + PACK_BELOW;

/**
 * Where each content of a pack is read to: the slab, each file at its place in it by the size the
 * scan saw. Read so, the pack is that buffer, not a copy of a buffer per file: those left the
 * collector 64 MB of them at once at 100,000 files (docs/sync.md#peak-memory).
 */
function slotsFor(group: readonly FileEntry[], slab: Buffer): Map<FileEntry, Buffer> {
  const slots = new Map<FileEntry, Buffer>();
  let at = 0;
  for (const f of group) {
    slots.set(f, slab.subarray(at, at + f.size));
    at += f.size;
  }
  return slots;
}

/** The parts one after another: the buffer they fill when they lie so in it (a pack read into its slots), else a copy. */
function joined(parts: readonly Buffer[], size: number): Buffer {
  const first = parts[0]!;
  let end = first.byteOffset;
  for (const p of parts) {
    if (p.buffer !== first.buffer || p.byteOffset !== end) return Buffer.concat(parts, size);
    end += p.length;
  }
  return Buffer.from(first.buffer, first.byteOffset, size);
}

/**
 * Which of `wanted` the store holds already (a killed push sent them), each made young again for
 * garbage collection instead of being sent; one it cannot make young is gone, and sent. A store
 * may leave out asking about small ones.
 */
async function heldAlready(store: SyncStore, tree: string, wanted: readonly { sha256: string; size: number }[]): Promise<Set<string>> {
  const held = new Set<string>();
  await mapPool([...(await store.findBlobs(tree, wanted))], 16, async (sha) => {
    if (await store.touchBlob(tree, sha)) held.add(sha);
  });
  return held;
}

function count(sent: Sent, progress: Progress, bytes: number, files = 1): void {
  sent.files += files;
  sent.bytes += bytes;
  progress.advance(bytes);
}

/**
 * Reads (or sends) the first file holding a content; the other holders are tried only when it
 * changed since the scan, and each changed file's entry is recorded as it was read. When every
 * holder changed, no entry names the scanned content any more: each is stored as it was read.
 */
async function firstHolding(
  first: FileEntry,
  all: readonly FileEntry[],
  read: (entry: FileEntry) => Promise<Read>,
  sent: Sent,
  strict: boolean,
): Promise<Read[]> {
  const got: Read[] = [];
  for (const entry of holders(first, all)) {
    const r = await read(entry).catch((error: unknown) => {
      // Unless --strict, a file that cannot be read as one now is left at its previous version.
      if (strict || !(error instanceof AtlasError && (error as ChangedFile).changedFile)) throw error;
      sent.left.push(entry.path);
      return undefined;
    });
    if (!r) continue;
    got.push(r);
    if (r.got.sha256 === entry.sha256 && r.got.bytes === entry.size) break;
    r.entry = {
      path: entry.path,
      checksum: r.got.md5,
      size: r.got.bytes,
      modified_at: entry.modified_at,
      sha256: r.got.sha256,
      ...(entry.mode !== undefined ? { mode: entry.mode } : {}),
    };
    sent.changed.push(r.entry);
  }
  return got;
}

/**
 * One pack of what was read, in order, each content once; not sent when the store holds it already.
 * Each entry read into it is given its place there (the manifest's `pack` and `offset`) at once,
 * rather than kept in a table of every content's place until the end of the push.
 */
async function sendPack(store: SyncStore, tree: string, read: readonly Read[], sent: Sent, progress: Progress): Promise<void> {
  const parts: Buffer[] = [];
  const places = new Map<string, number>();
  let size = 0;
  for (const r of read) {
    if (!r.body || places.has(r.got.sha256)) continue;
    places.set(r.got.sha256, size);
    parts.push(r.body);
    size += r.body.length;
  }
  if (places.size === 0) return;
  const body = joined(parts, size);
  const name = hash('sha256', body, 'hex');
  // A push that was killed after sending this pack made it already.
  if (!(await heldAlready(store, tree, [{ sha256: name, size }])).has(name)) {
    await store.putBytes(tree, body, name);
    count(sent, progress, size, places.size);
  } else progress.advance(size);
  for (const r of read) {
    const offset = r.body ? places.get(r.got.sha256) : undefined;
    if (offset === undefined) continue;
    r.entry.pack = name;
    r.entry.offset = offset;
  }
}

function* holders(first: FileEntry, all: readonly FileEntry[]): Generator<FileEntry> {
  yield first;
  for (const f of all) if (f.sha256 === first.sha256 && f !== first) yield f;
}

function local(root: string, entry: FileEntry): string {
  return join(root, ...entry.path.split('/'));
}

/**
 * A file's bytes, refusing a symbolic link put in its place since the scan (it may point anywhere):
 * in `slot` when they fill it exactly, else (the file changed size since the scan) in a buffer of
 * their own. Synchronous: the scan has just read the file (it is in the page cache), and three
 * round trips through libuv's thread pool per file cost more than the reads themselves.
 */
function readNoFollow(path: string, slot?: Buffer): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    throw changedUnderPush(path, error);
  }
  try {
    if (slot && readFully(fd, slot) === slot.length) return slot;
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A file that became a symbolic link (refused: it may point anywhere) or went away since the scan,
 * named; any other failure as it is (a store's own error names the store). The error may come
 * wrapped by the store, its cause the file's.
 */
function changedUnderPush(path: string, error: unknown): unknown {
  let code: unknown;
  let rewritten = false;
  for (
    let e = error as { code?: unknown; cause?: unknown; changedFile?: boolean } | undefined;
    e && code === undefined;
    e = e.cause as typeof e
  ) {
    code = e.code;
    rewritten ||= e.changedFile === true;
  }
  const now =
    code === 'ELOOP'
      ? 'is a symbolic link now'
      : code === 'ENOENT'
        ? 'is gone'
        : rewritten
          ? 'was rewritten while it was sent in parts'
          : undefined;
  if (!now) return error;
  const changed = new AtlasError(`${path} ${now}: it changed while it was being pushed; nothing was published (--strict)`, {
    exitCode: EXIT.failure,
    hint: 'run the push again once nothing is writing to the folder, or without --strict to publish the rest',
  });
  return Object.assign(changed, { changedFile: true });
}

/** A failure that says a file changed while the push read it (changedUnderPush). */
interface ChangedFile {
  changedFile?: boolean;
}

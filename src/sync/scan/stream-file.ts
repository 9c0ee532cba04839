// Bytes from a stream into a new file (never an existing one), with the SHA-256 (and the MD5, where
// asked for) of what was written; the answer to a ranged read, into memory; a stream's failures told in the store's words;
// a text file read in pieces.
// The file is written with synchronous calls on its descriptor: a pull writes thousands of small
// files, and each asynchronous open, write and close is a round trip through libuv's thread pool
// that cost more CPU than the call itself (docs/performance.md#workspace-sync). Each call writes
// one chunk as it arrives (at most 64 KiB from a socket or a file stream) into the page cache, so
// the event loop is held for microseconds at a time, never for the whole file.
import { createHash, type Hash, hash } from 'node:crypto';
import { closeSync, constants, fchmodSync, futimesSync, openSync, readSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { personMode } from '../../store/private-umask.js';
import type { Pieces } from './body-pieces.js';
import { chunksRead } from './chunk-collect.js';

/**
 * What was written: its size and SHA-256, and its MD5 where asked for. A content the store keeps
 * under its SHA-256 (a blob, a pack's piece) is checked by that and its size; the MD5 its version
 * records is taken as the version says (computing it cost a pull of 10,000 files of 10 KiB about
 * a tenth of its CPU, docs/sync.md#what-a-pull-checks).
 */
export interface Written {
  bytes: number;
  sha256: string;
  md5?: string;
}

/** What a store's download reports about the bytes it wrote, MD5 included. */
export interface Received extends Written {
  md5: string;
}

/**
 * A new file (never an existing one) written piece by piece, with the SHA-256 (and the MD5, unless
 * told not to) of what was written. A failure of the disk names the file (the store's error messages tell it from theirs).
 */
export class NewFile {
  /**
   * The only piece so far: most files of a pull arrive in one piece, hashed at the end in one call
   * each. A Hash object per file kept its OpenSSL state in C++ memory until a full collection took
   * the object: 8 MB at once at 100,000 files (heaptrack), 9-11 MB of a pull's peak RSS.
   */
  private first: Buffer | undefined;
  /** Made once a second piece comes (the MD5 only when asked for). */
  private hashes: [sha256: Hash, md5: Hash | undefined] | undefined;
  private bytes = 0;
  private readonly fd: number;

  /** `exact`: the file gets `mode` itself, not what the umask leaves of it; `md5`: its MD5 is computed too. */
  constructor(
    readonly path: string,
    mode = 0o644,
    exact = false,
    private readonly md5 = true,
  ) {
    this.fd = withPath(path, () => openSync(path, 'wx', mode));
    // The person's file: the mode their umask gives, not atlas's own 0600.
    const shared = exact ? mode : personMode(mode);
    if (shared !== undefined)
      withPath(
        path,
        () => fchmodSync(this.fd, shared),
        () => closeSync(this.fd),
      );
  }

  /** `chunk` must stay as it is until close(): a file's only piece is hashed then (streams give each chunk its own memory). */
  write(chunk: Buffer): void {
    if (this.hashes === undefined && this.first === undefined) this.first = chunk;
    else {
      if (this.hashes === undefined) {
        this.hashes = [createHash('sha256').update(this.first!), this.md5 ? createHash('md5').update(this.first!) : undefined];
        this.first = undefined;
      }
      this.hashes[0].update(chunk);
      this.hashes[1]?.update(chunk);
    }
    withPath(this.path, () => {
      for (let at = 0; at < chunk.length; ) at += writeSync(this.fd, chunk, at);
    });
    this.bytes += chunk.length;
  }

  /**
   * Closes it, its modification time first set to `mtime` when given (unix seconds; on the
   * descriptor: no second lookup of the path); what was written.
   */
  close(mtime?: number): Written {
    try {
      if (mtime !== undefined) futimesSync(this.fd, mtime, mtime);
    } finally {
      closeSync(this.fd);
    }
    const bytes = this.first ?? NOTHING;
    const [sha256, md5] = this.hashes ?? [];
    const got: Written = { bytes: this.bytes, sha256: sha256 ? sha256.digest('hex') : hash('sha256', bytes, 'hex') };
    if (this.md5) got.md5 = md5 ? md5.digest('hex') : hash('md5', bytes, 'hex');
    return got;
  }
}

const NOTHING = Buffer.alloc(0);

/** `run`, a file system error from it given `path` when it has none (a write on a descriptor names no file). */
function withPath<T>(path: string, run: () => T, undo?: () => void): T {
  try {
    return run();
  } catch (error) {
    undo?.();
    const e = error as NodeJS.ErrnoException;
    if (e.syscall !== undefined && e.path === undefined) e.path = path;
    throw error;
  }
}

type Source = AsyncIterable<Buffer | string> | Iterable<Buffer>;

/** A writer of a store's body into a new file: streamToNewFile, or streamBlobToNewFile. */
export type NewFileWriter<R extends Written> = (source: Source, dest: string) => Promise<R>;

/** `source` into a new file `dest`, with its MD5 and SHA-256. */
export async function streamToNewFile(source: Source, dest: string, mode = 0o644): Promise<Received> {
  return (await streamInto(source, () => new NewFile(dest, mode))) as Received;
}

/** A content the store keeps under its SHA-256 into a new file `dest`: its SHA-256 only. */
export function streamBlobToNewFile(source: Source, dest: string): Promise<Written> {
  return streamInto(source, () => new NewFile(dest, 0o644, false, false));
}

/** A failure to make the file (it exists, no room) rejects, as the writes' do. */
async function streamInto(source: Source, make: () => NewFile): Promise<Written> {
  const file = make();
  let got: Written | undefined;
  try {
    for await (const piece of source) {
      file.write(typeof piece === 'string' ? Buffer.from(piece) : piece);
      chunksRead(piece.length);
    }
  } finally {
    got = file.close();
  }
  return got;
}

/** Where the byte past a full buffer is read to (only whether there is one matters). */
const PAST_END = Buffer.alloc(1);

/**
 * Reads a file from its start into `into`: how many bytes it holds, or undefined when it holds
 * more than `into` (positional reads: the descriptor's own position does not move). Synchronous:
 * for small files, three round trips through libuv's thread pool per file (open, read, close) cost
 * more than the calls themselves (docs/performance.md#workspace-sync).
 */
export function readFully(fd: number, into: Buffer): number | undefined {
  let got = 0;
  for (let n = -1; n !== 0 && got < into.length; got += n) n = readSync(fd, into, got, into.length - got, got);
  return got === into.length && readSync(fd, PAST_END, 0, 1, got) > 0 ? undefined : got;
}

/**
 * The pieces of a ranged read of `length` bytes (bodyPieces: cut from a whole object when a server
 * ignores Range), copied into one buffer as they arrive (`into`, when given, else a new one: a read
 * is up to 2 MiB, never held twice).
 */
export async function collectRange(pieces: Pieces, length: number, into?: Buffer): Promise<Buffer> {
  const out = into ?? Buffer.allocUnsafe(length);
  let at = 0;
  await pieces((piece) => {
    at += piece.copy(out, at);
    chunksRead(piece.length);
  });
  return out.subarray(0, at);
}

/** The pieces of `source`, a failure while reading them told as `failed` says. */
export async function* rethrown<T>(source: AsyncIterable<T>, failed: (error: unknown) => Error): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (error) {
    throw failed(error);
  }
}

/**
 * How much of a text file is read at a time. Pieces of 1 MiB, and the strings a parser makes of
 * them, were large objects that V8 frees only in a full collection: V8's large-object space held
 * 27-29 MB at the peak of a no-op pull of 100,000 files, 14-16 MB with these, which die young
 * (docs/sync.md#peak-memory).
 */
const TEXT_PIECE = 64 * 1024;

/**
 * A text file (a `.sandbox-state`) in pieces as it is read, opened without following a symbolic
 * link (ELOOP): 20 MB of state at 100,000 files is never held whole. The stream closes the file at
 * its end, or when the reader stops early. Errors of the open (ENOENT, ELOOP) are the caller's.
 */
export async function readTextPieces(path: string): Promise<AsyncIterable<string>> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  return handle.createReadStream({ encoding: 'utf8', highWaterMark: TEXT_PIECE });
}

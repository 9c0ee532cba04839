// Reading an object's body from an S3 store: whole into a new file, or a byte range into memory,
// each tried again when the body is cut off midway.
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { bodyPieces } from '../scan/body-pieces.js';
import type { NewFileWriter, Written } from '../scan/stream-file.js';
import { collectRange } from '../scan/stream-file.js';
import type { DirectRequests } from './s3-direct.js';
import { withRetries } from './s3-retry.js';
import type { LazySdk } from './s3-sdk.js';
import type { PackReader } from './store.js';

export interface S3Reader {
  sdk: LazySdk;
  bucket: string;
  direct: DirectRequests;
  /** Attempts per request (sync.retries + 1, or AWS_MAX_ATTEMPTS). */
  attempts: number;
}

/** A download into `dest` by `write`, the partial file removed when the body is cut off midway. */
export function getObjectTo<R extends Written>(reader: S3Reader, key: string, dest: string, write: NewFileWriter<R>): Promise<R> {
  return readBody(reader, key, undefined, (body) =>
    write(body, dest).catch(async (error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error; // never ours to remove
      await rm(dest, { force: true });
      // This disk's failure (full, not writable) is not cured by asking again, and names the file; a cut body is retried.
      const e = error as NodeJS.ErrnoException;
      throw e.syscall === 'write' || e.syscall === 'open' ? Object.assign(e, { path: e.path ?? dest }) : cutOff(error);
    }),
  );
}

/** `length` bytes of an object from `start` (into `into` when given). */
export function getObjectRange(reader: S3Reader, key: string, start: number, length: number, into?: Buffer): Promise<Buffer> {
  const range = `bytes=${start}-${start + length - 1}`;
  return readBody(reader, key, range, (body, whole) => collectRange(bodyPieces(body, whole ? start : 0, length, cutOff), length, into));
}

/**
 * `length` bytes of an object from `start`, streamed to `consume` (exactly the range, also from a
 * server that ignores Range and sends the whole object); a failure of the stream is retried (the
 * range asked again, `consume` called again), one `consume` throws is not.
 */
export function streamObjectRange<T>(reader: S3Reader, key: string, start: number, length: number, consume: PackReader<T>): Promise<T> {
  const range = `bytes=${start}-${start + length - 1}`;
  return readBody(reader, key, range, (body, whole) => consume(bodyPieces(body, whole ? start : 0, length, cutOff)));
}

/**
 * GET of an object (or of `range` of it) read by `consume` (told whether the server sent the whole
 * object instead of the range), tried again when the body is cut off
 * midway (`consume` says so with cutOff()): the SDK retries what fails before the body, not a
 * stream that breaks while it is read.
 */
function readBody<T>(
  reader: S3Reader,
  key: string,
  range: string | undefined,
  consume: (body: Readable, whole: boolean) => Promise<T>,
): Promise<T> {
  return withRetries(
    reader.attempts,
    async () => {
      const direct = await reader.direct.get(key, range);
      if (direct) return consume(direct, range !== undefined && direct.statusCode === 200);
      const { client, S3 } = await reader.sdk.get();
      const got = await client.send(new S3.GetObjectCommand({ Bucket: reader.bucket, Key: key, ...(range ? { Range: range } : {}) }));
      return consume(got.Body as Readable, range !== undefined && got.ContentRange === undefined);
    },
    (error) => (error as { $cutOff?: boolean }).$cutOff === true,
  );
}

/** Marks a failure while a body was read: the request is tried again. */
function cutOff(error: unknown): unknown {
  return Object.assign(error as object, { $cutOff: true });
}

// Deleting objects from an S3 store: every key under a prefix (a version being pruned), and the
// objects of an unfinished push. DeleteObjects goes in batches of 1,000 with Content-MD5: the SDK
// sends only a CRC32 under WHEN_REQUIRED, and many S3-compatible servers refuse a batch delete
// without Content-MD5. A server that refuses batch deletes altogether gets one DeleteObject per key.
import { createHash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { mapPool } from '../scan/pool.js';
import { s3Error, s3Failure } from './s3-errors.js';

export interface S3Place {
  client: S3Client;
  bucket: string;
  /** s3://bucket/prefix, for messages. */
  location: string;
  /** Whether DeleteObjects is still tried (false once the server refused it). */
  batch: { ok: boolean };
}

export const DELETE_BATCH = 1000;
const SINGLE_DELETES_IN_FLIGHT = 16;

/** Every object whose key starts with `prefix` (which ends with "/"), with its size. */
export async function listUnder(place: S3Place, prefix: string): Promise<{ key: string; size: number; modifiedMs: number }[]> {
  const found: { key: string; size: number; modifiedMs: number }[] = [];
  let token: string | undefined;
  do {
    const page = await place.client
      .send(new ListObjectsV2Command({ Bucket: place.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }))
      .catch((error: unknown) => {
        throw s3Error(error, `a listing of ${prefix}`, place.location);
      });
    // A key outside the prefix (a server that ignores Prefix) is never acted on.
    for (const o of page.Contents ?? [])
      if (o.Key?.startsWith(prefix)) found.push({ key: o.Key, size: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() ?? 0 });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return found;
}

export async function deleteOne(place: S3Place, key: string): Promise<void> {
  await place.client.send(new DeleteObjectCommand({ Bucket: place.bucket, Key: key })).catch((error: unknown) => {
    throw s3Error(error, `a delete of ${key}`, place.location);
  });
}

/** Deletes `keys` (all under `under`), in batches; a key the server could not delete fails the call, named. */
export async function deleteKeys(place: S3Place, keys: readonly string[], under: string): Promise<void> {
  for (let i = 0; i < keys.length; i += DELETE_BATCH) {
    const batch = keys.slice(i, i + DELETE_BATCH);
    if (place.batch.ok) {
      try {
        await deleteBatch(place, batch, under);
        continue;
      } catch (error) {
        if (!batchRefused(error)) throw s3Error(error, `a batch delete of ${batch.length} object(s) under ${under}`, place.location);
        place.batch.ok = false;
      }
    }
    await mapPool(batch, SINGLE_DELETES_IN_FLIGHT, (key) => deleteOne(place, key));
  }
}

async function deleteBatch(place: S3Place, keys: readonly string[], under: string): Promise<void> {
  const command = new DeleteObjectsCommand({ Bucket: place.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } });
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { body?: unknown; headers?: Record<string, string> };
      if (typeof request.body === 'string' && request.headers)
        request.headers['content-md5'] = createHash('md5').update(request.body).digest('base64');
      return next(args);
    },
    { step: 'build', name: 'atlasDeleteObjectsContentMd5' },
  );
  const result = await place.client.send(command);
  const errors = result.Errors ?? [];
  if (errors.length === 0) return;
  const listed = errors
    .slice(0, 5)
    .map((e) => `${e.Key} (${e.Code ?? 'error'}${e.Message ? `: ${e.Message}` : ''})`)
    .join('; ');
  const denied = errors.some((e) => e.Code === 'AccessDenied');
  throw new AtlasError(
    `${errors.length} object(s) under ${under} in ${place.location} could not be deleted: ${listed}${errors.length > 5 ? ` (and ${errors.length - 5} more)` : ''}`,
    {
      exitCode: EXIT.failure,
      hint: denied
        ? 'grant these credentials s3:DeleteObject on the prefix, then run the command again'
        : 'run the command again: a version removed halfway has no .sandbox-state, is never pulled, and the next prune removes the rest',
    },
  );
}

/** The server does not take DeleteObjects (an S3-compatible server without it, or the request's form refused). */
function batchRefused(error: unknown): boolean {
  if (error instanceof AtlasError) return false;
  const { name, status } = s3Failure(error);
  return status === 400 || status === 405 || status === 411 || status === 501 || name === 'NotImplemented' || name === 'MissingContentMD5';
}

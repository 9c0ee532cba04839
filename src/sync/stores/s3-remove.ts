// Deleting objects from an S3 store: every key under a prefix (a version being pruned), and the
// objects of an unfinished push. DeleteObjects goes in batches of 1,000 with Content-MD5: the SDK
// sends only a CRC32 under WHEN_REQUIRED, and many S3-compatible servers refuse a batch delete
// without Content-MD5. A server that refuses batch deletes altogether gets one DeleteObject per key.
import { createHash } from 'node:crypto';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { mapPool } from '../scan/pool.js';
import { s3Error, s3Failure } from './s3-errors.js';
import type { S3Place } from './s3-list.js';

export const DELETE_BATCH = 1000;
const SINGLE_DELETES_IN_FLIGHT = 16;

export async function deleteOne(place: S3Place, key: string): Promise<void> {
  try {
    if (await place.direct.remove(key)) return;
    const { client, S3 } = await place.sdk.get();
    await client.send(new S3.DeleteObjectCommand({ Bucket: place.bucket, Key: key }));
  } catch (error) {
    throw s3Error(error, `a delete of ${key}`, place.location);
  }
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
  const { client, S3 } = await place.sdk.get();
  const command = new S3.DeleteObjectsCommand({ Bucket: place.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } });
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { body?: unknown; headers?: Record<string, string> };
      if (typeof request.body === 'string' && request.headers)
        request.headers['content-md5'] = createHash('md5').update(request.body).digest('base64');
      return next(args);
    },
    { step: 'build', name: 'atlasDeleteObjectsContentMd5' },
  );
  const result = await client.send(command);
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

// Sending a content to an S3 store under its SHA-256: one PutObject with Content-MD5 for a small
// file or bytes in memory, a multipart upload for a large file.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { hashFile } from '../scan/file-hash.js';
import type { Received } from '../scan/stream-file.js';
import type { DirectRequests } from './s3-direct.js';
import type { LazySdk } from './s3-sdk.js';

/** Files up to this size go in one PutObject (with Content-MD5); larger ones in parts. */
const SINGLE_PUT_LIMIT = 16 * 1024 * 1024;
/** A file a push sends is never read through a symbolic link put in its place since the scan. */
const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW;
const PART_SIZE = 16 * 1024 * 1024;

export interface S3Writer {
  sdk: LazySdk;
  bucket: string;
  direct: DirectRequests;
}

/** The key of the blob named `sha256` (it refuses a name that is no SHA-256). */
export type BlobKey = (sha256: string) => string;

/**
 * One PutObject with Content-MD5 (the server checks the bytes) under the SHA-256 of the bytes
 * read, or, for a large file, a multipart upload under the hash of a first read, completed only
 * when the bytes sent hash the same (a file changed meanwhile is refused: push again).
 */
export async function putFile(writer: S3Writer, blobKey: BlobKey, localFile: string): Promise<Received> {
  const handle = await open(localFile, READ_NO_FOLLOW);
  try {
    const { size } = await handle.stat();
    if (size <= SINGLE_PUT_LIMIT) {
      return putBody(writer, blobKey, size === 0 ? Buffer.alloc(0) : await readFile(handle));
    }
    const first = await hashFile(localFile);
    return await putMultipart(writer, blobKey(first.sha256), handle, first.sha256);
  } finally {
    await handle.close();
  }
}

/** One PutObject of bytes held in memory, under their SHA-256 (`known`: the caller's, of these bytes), with Content-MD5. */
export async function putBody(writer: S3Writer, blobKey: BlobKey, body: Buffer, known?: string): Promise<Received> {
  const digest = createHash('md5').update(body).digest();
  const sha256 = known ?? createHash('sha256').update(body).digest('hex');
  const key = blobKey(sha256);
  // Without the SDK's per-request work and headers when its shape is known (s3-direct.ts).
  if (!(await writer.direct.put(key, body, digest.toString('base64'), sha256))) {
    const { client, S3 } = await writer.sdk.get();
    await client.send(
      new S3.PutObjectCommand({
        Bucket: writer.bucket,
        Key: key,
        Body: body,
        ContentLength: body.length,
        ContentMD5: digest.toString('base64'),
      }),
    );
  }
  return { bytes: body.length, md5: digest.toString('hex'), sha256 };
}

async function putMultipart(writer: S3Writer, key: string, handle: Awaited<ReturnType<typeof open>>, expected: string): Promise<Received> {
  const { client, S3 } = await writer.sdk.get();
  const created = await client.send(new S3.CreateMultipartUploadCommand({ Bucket: writer.bucket, Key: key }));
  const uploadId = created.UploadId!;
  const whole = createHash('md5');
  const sha = createHash('sha256');
  const parts: { ETag: string; PartNumber: number }[] = [];
  let bytes = 0;
  try {
    for (let part = 1; ; part++) {
      const buffer = Buffer.alloc(PART_SIZE);
      const { bytesRead } = await handle.read(buffer, 0, PART_SIZE, null);
      if (bytesRead === 0) break;
      const body = buffer.subarray(0, bytesRead);
      whole.update(body);
      sha.update(body);
      bytes += bytesRead;
      const done = await client.send(
        new S3.UploadPartCommand({
          Bucket: writer.bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: part,
          Body: body,
          ContentLength: bytesRead,
          ContentMD5: createHash('md5').update(body).digest('base64'),
        }),
      );
      parts.push({ ETag: done.ETag!, PartNumber: part });
    }
    const sha256 = sha.digest('hex');
    if (sha256 !== expected) {
      // Named by the push, by its path (transfer/upload.ts): this is not the store's failure.
      throw Object.assign(new Error(`the file changed while it was being sent to ${key}`), { changedFile: true });
    }
    await client.send(
      new S3.CompleteMultipartUploadCommand({ Bucket: writer.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }),
    );
    return { bytes, md5: whole.digest('hex'), sha256 };
  } catch (error) {
    await client.send(new S3.AbortMultipartUploadCommand({ Bucket: writer.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
    throw error;
  }
}

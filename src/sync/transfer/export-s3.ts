// `atlas sync export … s3://bucket/prefix`: a stored version written out as plain objects under a
// prefix (one object per file, at `<prefix>/<path>`), for tools that read a bucket and know nothing
// of atlas. The prefix must hold no object yet, so an export never mixes with or overwrites
// anything. S3 has no links and no folders: links and empty folders are not written (the result
// lists the links). The bucket is reached with the settings of sync.s3 (endpoint, region,
// path style) and the same retries as the store.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { FileEntry } from '../../domain/sync-state.js';
import { mapPool } from '../scan/pool.js';
import { parseStoreAddress } from '../stores/open-store.js';
import { makeS3Client } from '../stores/s3-client.js';
import { s3Error } from '../stores/s3-errors.js';
import { attemptsFrom } from '../stores/s3-retry.js';

export class S3ExportDestination {
  readonly location: string;
  private readonly client: S3Client;

  private constructor(
    private readonly bucket: string,
    private readonly prefix: string,
    config: Config,
  ) {
    this.location = `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
    this.client = makeS3Client(config.sync.s3, attemptsFrom(config.sync.retries));
  }

  /** The destination named by an s3:// address (checked as sync.store is). */
  static open(address: string, config: Config): S3ExportDestination {
    const parsed = parseStoreAddress(address, '/');
    if (parsed.kind !== 's3') throw new AtlasError(`${address} is not an s3://bucket/prefix address`, { exitCode: EXIT.input });
    return new S3ExportDestination(parsed.bucket, parsed.prefix, config);
  }

  private key(path: string): string {
    return this.prefix ? `${this.prefix}/${path}` : path;
  }

  /** Refuses a prefix that already holds an object (an export writes into an empty one only). */
  async requireEmpty(): Promise<void> {
    const listed = await this.send(`a listing of ${this.location}`, () =>
      this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, ...(this.prefix ? { Prefix: `${this.prefix}/` } : {}), MaxKeys: 1 }),
      ),
    );
    if ((listed.KeyCount ?? listed.Contents?.length ?? 0) > 0) {
      throw new AtlasError(`${this.location} is not empty: an export writes under a prefix that holds no object yet`, {
        exitCode: EXIT.input,
        hint: 'name a prefix that does not exist yet',
      });
    }
  }

  /** Uploads the files written under `root` (each checked against its MD5 by the server). */
  async upload(root: string, files: readonly FileEntry[]): Promise<void> {
    await mapPool(files, 8, (f) =>
      this.send(`the upload of ${f.path} to ${this.location}`, () =>
        this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: this.key(f.path),
            Body: createReadStream(join(root, f.path)),
            ContentLength: f.size,
            ContentMD5: Buffer.from(f.checksum, 'hex').toString('base64'),
          }),
        ),
      ),
    );
  }

  close(): void {
    this.client.destroy();
  }

  private async send<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw s3Error(error, what, this.location);
    }
  }
}

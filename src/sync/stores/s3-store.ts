// A store in an S3 bucket (or any S3-compatible server: sync.s3.endpoint, force_path_style).
// Contents are objects named by their SHA-256 (`<tree>/.blobs/ab/<sha256>`), sent once; a version
// is its manifest, gzipped on the wire when that pays.
// ETags are never taken for checksums (a multipart ETag is not an MD5): the version's
// `.sandbox-state` carries the hashes, and every download is checked against it (by its SHA-256,
// or its MD5 for a file stored before content addressing).
import { createHash } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { sortVersions } from '../../domain/sync-plan.js';
import { BLOB_GRACE_SECONDS } from '../../domain/sync-retention.js';
import { BLOB_AREA, blobPath, SHA256_PATTERN, STATE_FILE_NAME } from '../../domain/sync-state.js';
import { mapPool } from '../scan/pool.js';
import type { NewFileWriter, Received, Written } from '../scan/stream-file.js';
import { rethrown, streamBlobToNewFile, streamToNewFile } from '../scan/stream-file.js';
import { DirectRequests } from './s3-direct.js';
import { s3Error, s3Failure } from './s3-errors.js';
import type { S3Place } from './s3-list.js';
import { listPage, listUnder } from './s3-list.js';
import { manifestBody, manifestChunks } from './s3-manifest.js';
import { getObjectRange, getObjectTo, type S3Reader, streamObjectRange } from './s3-read.js';
import { deleteKeys, deleteOne } from './s3-remove.js';
import { attemptsFrom } from './s3-retry.js';
import { LazySdk } from './s3-sdk.js';
import { envCredentials, shapeFromSettings } from './s3-shape.js';
import type { Credentials } from './s3-sign.js';
import { encodeKey } from './s3-sign.js';
import { timeoutsFrom } from './s3-timeouts.js';
import { putBody, putFile, type S3Writer } from './s3-upload.js';
import type { PackReader, RemovedVersion, StoredTask, SyncStore } from './store.js';
import { checkVersionAddress, LOCK_AREA, LOCK_NAME, parseTaskIndexName, TASK_INDEX, taskIndexName } from './store.js';

/** A push asks whether the store holds a content (left by a killed push) only from this size on. */
export const ASK_FROM = 1024 * 1024;

export class S3Store implements SyncStore {
  readonly kind = 's3' as const;
  readonly location: string;
  /** The SDK, loaded when a request needs it (s3-sdk.ts). */
  private readonly sdk: LazySdk;
  /** The environment's keys, when they are what the SDK would sign with; else its provider chain's. */
  private readonly credentials: Credentials | undefined;
  private readonly place: S3Place;
  /** What the reads (s3-read.ts) and uploads (s3-upload.ts) send through. */
  private readonly io: S3Reader & S3Writer;
  /** Whether the server takes `If-None-Match` on a PUT; false once it answered that it does not. */
  private conditionalWrites = true;

  constructor(
    private readonly bucket: string,
    private readonly prefix: string,
    settings: Config['sync']['s3'],
    retries = 10,
  ) {
    const attempts = attemptsFrom(retries);
    this.location = `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
    const timeouts = timeoutsFrom();
    this.sdk = new LazySdk(async () => (await import('./s3-client.js')).makeS3Client(settings, attempts, timeouts));
    this.credentials = envCredentials();
    const direct = new DirectRequests(this.sdk, timeouts, {
      shape: shapeFromSettings(settings, bucket),
      credentials: this.credentials,
      attempts,
    });
    this.place = { sdk: this.sdk, direct, bucket, location: this.location, batch: { ok: true } };
    this.io = { sdk: this.sdk, bucket, direct, attempts };
  }

  private key(...parts: string[]): string {
    return [this.prefix, ...parts].filter((p) => p !== '').join('/');
  }

  private async send<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw s3Error(error, what, this.location);
    }
  }

  async checkAccess(options: { listing?: boolean; reading?: boolean } = {}): Promise<void> {
    // Credentials first: a missing or refused key fails here, before any transfer.
    if (!this.credentials)
      await this.send('the credentials', async () => {
        await (await this.sdk.get()).client.config.credentials();
      });
    if (options.listing === false) return;
    await this.send(`a listing of ${this.location}`, () => listPage(this.place, this.key(''), { maxKeys: 1 }));
  }

  /** One delimiter listing of `path`: the folders and the objects directly under it. */
  private async listLevel(path: string): Promise<{ folders: string[]; objects: string[] }> {
    const prefix = `${this.key(path)}/`.replace(/^\//, '');
    const folders: string[] = [];
    const objects: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.send(`a listing of ${prefix}`, () => listPage(this.place, prefix, { delimiter: '/', token }));
      for (const p of page.folders) {
        const name = p.startsWith(prefix) ? p.slice(prefix.length).replace(/\/$/, '') : '';
        if (name) folders.push(name);
      }
      for (const o of page.objects) if (o.key.startsWith(prefix)) objects.push(o.key.slice(prefix.length));
      token = page.next;
    } while (token);
    return { folders, objects };
  }

  async listVersionNames(tree: string): Promise<string[]> {
    // Each complete version has its .sandbox-state directly inside: its folder is listed.
    return sortVersions((await this.listLevel(tree)).folders);
  }

  async putTaskIndex(taskId: string, workspace: string): Promise<void> {
    const key = this.key(TASK_INDEX, taskIndexName(taskId, workspace));
    await this.putEmpty(key);
  }

  async listTaskIndex(): Promise<StoredTask[]> {
    return (await this.listLevel(TASK_INDEX)).objects.map(parseTaskIndexName).filter((t): t is StoredTask => t !== undefined);
  }

  /** An empty object (a lock, a task's index entry). */
  private async putEmpty(key: string): Promise<void> {
    await this.send(key, async () => {
      if ((await this.io.direct.putObject(key, Buffer.alloc(0), {})) === 200) return;
      const { client, S3 } = await this.sdk.get();
      await client.send(new S3.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: '', ContentLength: 0 }));
    });
  }

  async readState(tree: string, version: string): Promise<AsyncIterable<string> | undefined> {
    const key = this.key(tree, version, STATE_FILE_NAME);
    const read = (body: AsyncIterable<Uint8Array>) => rethrown(manifestChunks(body), (error) => s3Error(error, key, this.location));
    try {
      const direct = await this.io.direct.getOrMissing(key);
      if (direct === 'missing') return undefined;
      if (direct) return read(direct);
      const { client, S3 } = await this.sdk.get();
      const got = await client.send(new S3.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return read(got.Body as AsyncIterable<Uint8Array>);
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw s3Error(error, key, this.location);
    }
  }

  async download(tree: string, version: string, path: string, dest: string): Promise<Received> {
    return this.getTo(this.key(tree, version, path), dest, streamToNewFile);
  }

  /** A download into `dest` by `write`, the partial file removed when the body is cut off midway. */
  private getTo<R extends Written>(key: string, dest: string, write: NewFileWriter<R>): Promise<R> {
    return this.send(key, () => getObjectTo(this.io, key, dest, write));
  }

  private blobKey(tree: string, sha256: string): string {
    if (!SHA256_PATTERN.test(sha256)) throw new AtlasError(`not a blob name: ${JSON.stringify(sha256)}`, { exitCode: EXIT.failure });
    return this.key(tree, blobPath(sha256));
  }

  async getBlob(tree: string, sha256: string, dest: string): Promise<Written> {
    return this.getTo(this.blobKey(tree, sha256), dest, streamBlobToNewFile);
  }

  /**
   * A HEAD for each wanted content of ASK_FROM bytes or more; smaller ones are not asked about
   * (a PUT of an object that is there already is harmless, and for a small file the HEAD and its
   * round trip cost about what sending it does), nor is the blob area listed: at 100,000 blobs that
   * is 100 pages, and most of a push's time (docs/sync.md#stores-and-layout).
   */
  async findBlobs(tree: string, wanted: readonly { sha256: string; size: number }[]): Promise<Set<string>> {
    const found = new Set<string>();
    await mapPool(
      wanted.filter((w) => w.size >= ASK_FROM),
      32,
      async ({ sha256 }) => {
        if ((await this.blobModifiedMs(tree, sha256)) !== undefined) found.add(sha256);
      },
    );
    return found;
  }

  async putBlob(tree: string, localFile: string): Promise<Received> {
    return this.send(`the upload of ${localFile}`, () => putFile(this.io, (sha) => this.blobKey(tree, sha), localFile));
  }

  async putBytes(tree: string, body: Buffer, sha256?: string): Promise<string> {
    return (await this.send(`an upload of ${body.length} bytes`, () => putBody(this.io, (sha) => this.blobKey(tree, sha), body, sha256)))
      .sha256;
  }

  async readPackRange(tree: string, pack: string, start: number, length: number, into?: Buffer): Promise<Buffer | undefined> {
    if (length === 0) return Buffer.alloc(0);
    const key = this.blobKey(tree, pack);
    return this.send(key, () =>
      getObjectRange(this.io, key, start, length, into).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error))),
    );
  }

  async streamPackRange<T>(tree: string, pack: string, start: number, length: number, consume: PackReader<T>): Promise<T | undefined> {
    const key = this.blobKey(tree, pack);
    return this.send(key, () =>
      streamObjectRange(this.io, key, start, length, consume).catch((error: unknown) =>
        isMissing(error) ? undefined : Promise.reject(error),
      ),
    );
  }

  async touchBlob(tree: string, sha256: string): Promise<boolean> {
    const key = this.blobKey(tree, sha256);
    // A copy onto itself with new metadata gives the object a new LastModified: no bytes sent. The
    // source is percent-encoded per segment, as S3 wants it (a prefix may hold `;`, `#`, `?` or
    // `+`); servers that decode it as a URI path only (s3rver) find it under the encodeURI form.
    const { client, S3 } = await this.sdk.get();
    for (const source of new Set([encodeKey(`${this.bucket}/${key}`), encodeURI(`${this.bucket}/${key}`)])) {
      try {
        await client.send(
          new S3.CopyObjectCommand({
            Bucket: this.bucket,
            Key: key,
            CopySource: source,
            MetadataDirective: 'REPLACE',
            Metadata: { touched: String(Date.now()) },
          }),
        );
        return true;
      } catch {
        // gone, or the other encoding: tried next; at the end the caller sends the blob again
      }
    }
    return false;
  }

  async blobModifiedMs(tree: string, sha256: string): Promise<number | undefined> {
    const key = this.blobKey(tree, sha256);
    try {
      const direct = await this.io.direct.head(key);
      if (direct !== undefined) return direct === 'missing' ? undefined : direct;
      const { client, S3 } = await this.sdk.get();
      return (await client.send(new S3.HeadObjectCommand({ Bucket: this.bucket, Key: key }))).LastModified?.getTime();
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw s3Error(error, key, this.location);
    }
  }

  async listBlobs(tree: string): Promise<Map<string, { size: number; modifiedMs: number }>> {
    const area = `${this.key(tree, BLOB_AREA)}/`;
    const found = new Map<string, { size: number; modifiedMs: number }>();
    for (const o of await listUnder(this.place, area)) {
      const rest = o.key.slice(area.length);
      const sha = rest.slice(3);
      if (SHA256_PATTERN.test(sha) && rest === `${sha.slice(0, 2)}/${sha}`) found.set(sha, { size: o.size, modifiedMs: o.modifiedMs });
    }
    return found;
  }

  async removeBlobs(tree: string, sha256s: readonly string[]): Promise<void> {
    await deleteKeys(
      this.place,
      sha256s.map((sha) => this.blobKey(tree, sha)),
      `${this.key(tree, BLOB_AREA)}/`,
    );
  }

  async removeStaleUploads(tree: string, nowMs: number): Promise<void> {
    const area = `${this.key(tree, BLOB_AREA)}/`;
    // Best effort: a server without multipart listings (s3rver) simply keeps them.
    const { client, S3 } = await this.sdk.get();
    const listed = await client.send(new S3.ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: area })).catch(() => undefined);
    for (const u of listed?.Uploads ?? []) {
      if (!u.Key?.startsWith(area) || !u.UploadId || nowMs - (u.Initiated?.getTime() ?? nowMs) <= BLOB_GRACE_SECONDS * 1000) continue;
      await client
        .send(new S3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }))
        .catch(() => undefined);
    }
  }

  async commitVersion(tree: string, version: string, manifest: string | Iterable<string>): Promise<boolean> {
    const key = this.key(tree, version, STATE_FILE_NAME);
    const body = await manifestBody(typeof manifest === 'string' ? [manifest] : manifest);
    const md5 = createHash('md5').update(body.bytes).digest('base64');
    // If-None-Match: a concurrent push that picked the same name is refused, never overwritten (S3
    // and moto honour it; a server that ignores it, such as s3rver, lets the later write win, and
    // one that answers it with 501 gets plain writes from then on).
    const put = async (conditional: boolean): Promise<'written' | 'taken' | 'no-condition'> => {
      const headers: Record<string, string> = {
        'content-md5': md5,
        'content-type': 'application/json',
        ...(body.gzip ? { 'content-encoding': 'gzip' } : {}),
        ...(conditional ? { 'if-none-match': '*' } : {}),
      };
      const direct = await this.io.direct.putObject(key, body.bytes, headers);
      if (direct === 200) return 'written';
      if (direct === 412 || direct === 409) return 'taken';
      if (direct === 501) return 'no-condition';
      const { client, S3 } = await this.sdk.get();
      try {
        await client.send(
          new S3.PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: body.bytes,
            ...(conditional ? { IfNoneMatch: '*' } : {}),
            ContentMD5: md5,
            ContentType: 'application/json',
            ...(body.gzip ? { ContentEncoding: 'gzip' } : {}),
          }),
        );
        return 'written';
      } catch (error) {
        const { name, status } = s3Failure(error);
        if (name === 'PreconditionFailed' || name === 'ConditionalRequestConflict' || status === 412) return 'taken';
        if (conditional && (name === 'NotImplemented' || status === 501)) return 'no-condition';
        throw error;
      }
    };
    let outcome = await this.send(key, () => put(this.conditionalWrites));
    if (outcome === 'no-condition') {
      this.conditionalWrites = false;
      outcome = await this.send(key, () => put(false));
    }
    return outcome === 'written';
  }

  async putLock(tree: string, name: string): Promise<void> {
    const key = this.key(tree, LOCK_AREA, name);
    await this.putEmpty(key);
  }

  async listLocks(tree: string): Promise<{ name: string; modifiedMs: number }[]> {
    const area = `${this.key(tree, LOCK_AREA)}/`;
    return (await listUnder(this.place, area))
      .map((o) => ({ name: o.key.slice(area.length), modifiedMs: o.modifiedMs }))
      .filter((l) => LOCK_NAME.test(l.name));
  }

  async removeLock(tree: string, name: string): Promise<void> {
    await deleteOne(this.place, this.key(tree, LOCK_AREA, name));
  }

  async removeVersion(tree: string, version: string, options: { dryRun?: boolean } = {}): Promise<RemovedVersion> {
    checkVersionAddress(tree, version);
    const prefix = `${this.key(tree, version)}/`;
    const objects = await listUnder(this.place, prefix);
    const stateKey = `${prefix}${STATE_FILE_NAME}`;
    const found = {
      objects: objects.length,
      bytes: objects.reduce((n, o) => n + o.size, 0),
      incomplete: !objects.some((o) => o.key === stateKey),
    };
    if (options.dryRun || objects.length === 0) return found;
    // The state goes first, alone: if anything after it fails, the version reads as incomplete.
    if (!found.incomplete) await deleteOne(this.place, stateKey);
    await deleteKeys(
      this.place,
      objects.filter((o) => o.key !== stateKey).map((o) => o.key),
      prefix,
    );
    return found;
  }
}

function isMissing(error: unknown): boolean {
  const { name, status } = s3Failure(error);
  return name === 'NoSuchKey' || name === 'NotFound' || status === 404;
}

// A store in an S3 bucket (or any S3-compatible server: sync.s3.endpoint, force_path_style).
// Unchanged files of a new version are server-side copies (CopyObject): no content is sent.
// ETags are never taken for checksums (a multipart ETag is not an MD5): the version's
// `.sandbox-state` carries the MD5s, and every download is checked against it.
import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Config } from '../config/schema.js';
import { sortVersions } from '../domain/sync-plan.js';
import { STATE_FILE_NAME } from '../domain/sync-state.js';
import type { Received } from './safe-fs.js';
import { DirectRequests } from './s3-direct.js';
import { s3Error } from './s3-errors.js';
import type { S3Place } from './s3-remove.js';
import { deleteKeys, deleteOne, listUnder } from './s3-remove.js';
import type { RemovedVersion, StoredTask, SyncStore, VersionWriter } from './store.js';
import { checkVersionAddress, parseTaskIndexName, TASK_INDEX, taskIndexName } from './store.js';
import { streamToNewFile } from './stream-file.js';

/** Files up to this size go in one PutObject (with Content-MD5); larger ones in parts. */
const SINGLE_PUT_LIMIT = 16 * 1024 * 1024;
const PART_SIZE = 16 * 1024 * 1024;

function regionFrom(settings: Config['sync']['s3']): string {
  return settings.region || process.env['AWS_REGION'] || process.env['AWS_DEFAULT_REGION'] || 'us-east-1';
}

export class S3Store implements SyncStore {
  readonly kind = 's3' as const;
  readonly location: string;
  private readonly client: S3Client;
  private readonly place: S3Place;
  private readonly direct: DirectRequests;

  constructor(
    private readonly bucket: string,
    private readonly prefix: string,
    settings: Config['sync']['s3'],
  ) {
    this.location = `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
    // The SDK warns on every run under Node 20 about its own future releases; atlas supports
    // Node >= 20.19 and pins the SDK, so the warning tells a user nothing they can act on.
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    this.client = new S3Client({
      region: regionFrom(settings),
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      forcePathStyle: settings.force_path_style,
      // Many S3-compatible servers reject the SDK's default CRC checksums; the MD5s atlas keeps
      // (and Content-MD5 on uploads) already cover integrity.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // The middleware stack is built once per command type, not once per request: a pull or a
      // push sends thousands of the same command, and atlas never changes the stack.
      cacheMiddleware: true,
    });
    this.place = { client: this.client, bucket, location: this.location, batch: { ok: true } };
    this.direct = new DirectRequests(this.client);
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

  async checkAccess(): Promise<void> {
    // Credentials first: a missing or refused key fails here, before any transfer.
    await this.send('the credentials', async () => {
      await this.client.config.credentials();
    });
    await this.send(`a listing of ${this.location}`, () =>
      this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.key(''), MaxKeys: 1 })),
    );
  }

  /** One delimiter listing of `path`: the folders and the objects directly under it. */
  private async listLevel(path: string): Promise<{ folders: string[]; objects: string[] }> {
    const prefix = `${this.key(path)}/`.replace(/^\//, '');
    const folders: string[] = [];
    const objects: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.send(`a listing of ${prefix}`, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', ...(token ? { ContinuationToken: token } : {}) })),
      );
      for (const p of page.CommonPrefixes ?? []) {
        const name = p.Prefix?.slice(prefix.length).replace(/\/$/, '');
        if (name) folders.push(name);
      }
      for (const o of page.Contents ?? []) if (o.Key) objects.push(o.Key.slice(prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return { folders, objects };
  }

  async listVersionNames(tree: string): Promise<string[]> {
    // Each complete version has its .sandbox-state directly inside: its folder is listed.
    return sortVersions((await this.listLevel(tree)).folders);
  }

  async putTaskIndex(taskId: string, workspace: string): Promise<void> {
    const key = this.key(TASK_INDEX, taskIndexName(taskId, workspace));
    await this.send(key, () => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: '' })));
  }

  async listTaskIndex(): Promise<StoredTask[]> {
    return (await this.listLevel(TASK_INDEX)).objects.map(parseTaskIndexName).filter((t): t is StoredTask => t !== undefined);
  }

  async readState(tree: string, version: string): Promise<string | undefined> {
    const key = this.key(tree, version, STATE_FILE_NAME);
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return await got.Body!.transformToString('utf8');
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'NoSuchKey' || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
      throw s3Error(error, key, this.location);
    }
  }

  async download(tree: string, version: string, path: string, dest: string): Promise<Received> {
    const key = this.key(tree, version, path);
    return this.send(key, async () => {
      const body = (await this.direct.get(key)) ?? ((await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }))).Body as Readable);
      return streamToNewFile(body, dest);
    });
  }

  async beginVersion(tree: string, version: string): Promise<VersionWriter> {
    const written: string[] = [];
    const keyOf = (path: string) => this.key(tree, version, path);
    return {
      reuse: async (fromVersion, from, to) => {
        const source = this.key(tree, fromVersion, from);
        const key = keyOf(to);
        try {
          // encodeURI keeps "+" literal (servers decode the header as a path, not a form); "?" and
          // "#" would start a query or a fragment.
          const copySource = encodeURI(`${this.bucket}/${source}`).replace(/\?/g, '%3F').replace(/#/g, '%23');
          if (!(await this.direct.copy(copySource, key))) await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: key, CopySource: copySource }));
        } catch (error) {
          if ((error as { name?: string }).name === 'NoSuchKey') return false;
          throw s3Error(error, `a copy of ${source}`, this.location);
        }
        written.push(key);
        return true;
      },
      upload: async (path, localFile) => {
        const key = keyOf(path);
        const received = await this.send(key, () => this.putFile(key, localFile));
        written.push(key);
        return received;
      },
      commit: async (stateText) => {
        const key = keyOf(STATE_FILE_NAME);
        const body = Buffer.from(stateText, 'utf8');
        await this.send(key, () =>
          this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentMD5: createHash('md5').update(body).digest('base64'), ContentType: 'application/json' })),
        );
      },
      abort: async () => {
        await deleteKeys(this.place, written, this.key(tree, version)).catch(() => undefined);
      },
    };
  }

  async removeVersion(tree: string, version: string, options: { dryRun?: boolean } = {}): Promise<RemovedVersion> {
    checkVersionAddress(tree, version);
    const prefix = `${this.key(tree, version)}/`;
    const objects = await listUnder(this.place, prefix);
    const stateKey = `${prefix}${STATE_FILE_NAME}`;
    const found = { objects: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0), incomplete: !objects.some((o) => o.key === stateKey) };
    if (options.dryRun || objects.length === 0) return found;
    // The state goes first, alone: if anything after it fails, the version reads as incomplete.
    if (!found.incomplete) await deleteOne(this.place, stateKey);
    await deleteKeys(this.place, objects.filter((o) => o.key !== stateKey).map((o) => o.key), prefix);
    return found;
  }

  /** One PutObject with Content-MD5 (the server checks the bytes), or a multipart upload. */
  private async putFile(key: string, localFile: string): Promise<Received> {
    const handle = await open(localFile, 'r');
    try {
      const { size } = await handle.stat();
      if (size <= SINGLE_PUT_LIMIT) {
        const body = size === 0 ? Buffer.alloc(0) : await readFile(handle);
        const md5 = createHash('md5').update(body);
        const digest = md5.digest();
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length, ContentMD5: digest.toString('base64') }));
        return { bytes: body.length, md5: digest.toString('hex') };
      }
      return await this.putMultipart(key, handle);
    } finally {
      await handle.close();
    }
  }

  private async putMultipart(key: string, handle: Awaited<ReturnType<typeof open>>): Promise<Received> {
    const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }));
    const uploadId = created.UploadId!;
    const whole = createHash('md5');
    const parts: { ETag: string; PartNumber: number }[] = [];
    let bytes = 0;
    try {
      for (let part = 1; ; part++) {
        const buffer = Buffer.alloc(PART_SIZE);
        const { bytesRead } = await handle.read(buffer, 0, PART_SIZE, null);
        if (bytesRead === 0) break;
        const body = buffer.subarray(0, bytesRead);
        whole.update(body);
        bytes += bytesRead;
        const done = await this.client.send(
          new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: part, Body: body, ContentLength: bytesRead, ContentMD5: createHash('md5').update(body).digest('base64') }),
        );
        parts.push({ ETag: done.ETag!, PartNumber: part });
      }
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
    } catch (error) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
    return { bytes, md5: whole.digest('hex') };
  }
}

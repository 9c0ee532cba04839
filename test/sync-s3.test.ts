// Push and pull through two real S3 API servers, s3rver and moto (each started here on
// 127.0.0.1): contents stored once, multipart uploads, listings past 1,000 keys, credentials
// checked before any transfer, permission and network errors with their fix, hostile objects refused.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncStatus, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { motoMissing, startMoto } from './helpers/moto.js';
import type { S3Server } from './helpers/s3rver.js';
import { listKeys, S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

let server: S3Server;
const savedEnv = { ...process.env };

beforeAll(() => {
  Object.assign(process.env, S3RVER_ENV, {
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    AWS_CONFIG_FILE: '/nonexistent',
  });
});
afterAll(() => {
  process.env = savedEnv;
  removeScratch();
});

/** The same tests against both S3 implementations; moto is skipped, with the reason, where it is not installed. */
const SERVERS = [
  { name: 's3rver', start: () => startS3rver(), skip: undefined },
  { name: 'moto', start: () => startMoto(), skip: motoMissing() },
] as const;

const dir = scratch;

let prefixes = 0;
function setup() {
  const home = dir();
  const store = `s3://${server.bucket}/t${++prefixes}`;
  const config = configWith({ store, s3: { endpoint: server.endpoint, force_path_style: true } });
  const target = (root: string, name = 'ws'): SyncTarget => ({ root, tree: name, workspace: name });
  return { home, store, config, prefix: `t${prefixes}`, target, deps: () => depsFor(config, home) };
}

function client(credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }): S3Client {
  return new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true, credentials });
}

const keys = (prefix: string) => listKeys(server, prefix);

for (const kind of SERVERS) {
  describe.skipIf(kind.skip !== undefined)(`S3 store (${kind.name})${kind.skip ? `: skipped, ${kind.skip}` : ''}`, () => {
    beforeAll(async () => {
      server = await kind.start();
    }, 40_000);
    afterAll(() => server?.stop());

    it('pushes and pulls; a new version is a manifest (gzipped) and the blobs the store lacks, sending only the changed bytes', async () => {
      const s = setup();
      const src = dir();
      const big = Buffer.alloc(17 * 1024 * 1024 + 3, 7); // past the single-PUT limit: multipart
      writeTree(src, { 'a.txt': 'alpha', 'dir/b.txt': 'beta', 'weird name+%.txt': 'w', 'big.bin': big });
      const first = await syncPush(s.target(src), await s.deps());
      expect(first.stats).toMatchObject({ files_uploaded: 4, bytes_transferred: 5 + 4 + 1 + big.length });
      writeFileSync(join(src, 'a.txt'), 'ALPHA!');
      const second = await syncPush(s.target(src), await s.deps());
      expect(second.stats).toMatchObject({ files_uploaded: 1, files_reused: 3, bytes_transferred: 6 });
      expect(await keys(`${s.prefix}/ws/${second.stats.version}/`)).toEqual([`${s.prefix}/ws/${second.stats.version}/.sandbox-state`]);
      const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
      // The large content is a blob of its own; the small ones went in one pack per push.
      const blobKeys = await keys(`${s.prefix}/ws/.blobs/`);
      expect(blobKeys).toHaveLength(3);
      expect(blobKeys).toContain(`${s.prefix}/ws/.blobs/${sha(big).slice(0, 2)}/${sha(big)}`);
      const packs = await Promise.all(
        blobKeys
          .filter((k) => !k.endsWith(sha(big)))
          .map(async (k) =>
            Buffer.from(await (await client().send(new GetObjectCommand({ Bucket: server.bucket, Key: k }))).Body!.transformToByteArray()),
          ),
      );
      expect(packs.map((p) => p.length).sort((a, b) => a - b)).toEqual([6, 10]);
      for (const [i, k] of blobKeys.filter((k) => !k.endsWith(sha(big))).entries()) expect(k.endsWith(sha(packs[i]!))).toBe(true);
      const noop = await syncPush(s.target(src), await s.deps());
      expect(noop.stats.version).toBeNull();
      const dest = dir();
      const pulled = await syncPull(s.target(dest), await s.deps(), {});
      expect(pulled.stats).toMatchObject({ version: second.stats.version, files_downloaded: 4 });
      expect(readTree(dest)).toEqual(readTree(src));
      const older = await syncPull(s.target(dest), await s.deps(), { version: first.stats.version! });
      expect(older.stats).toMatchObject({ files_downloaded: 1, files_skipped: 3, bytes_transferred: 5 });
      const versions = await syncVersions(s.target(src), await s.deps());
      expect(versions.versions.map((v) => v.version)).toEqual([first.stats.version, second.stats.version]);
      const status = await syncStatus(s.target(dest), await s.deps());
      expect(status.latest_version).toBe(second.stats.version);
    }, 30_000);

    it('reuses a large content a killed push left, making it young again, under a prefix with ; # ? in it; sends a small one again without asking', async () => {
      const prefix = `odd;#? p${++prefixes}`;
      const config = configWith({ store: `s3://${server.bucket}/${prefix}`, s3: { endpoint: server.endpoint, force_path_style: true } });
      const large = Buffer.alloc(1024 * 1024 + 5, 'left by a killed push ');
      const small = 'small, left by a killed push';
      const keyOf = (body: string | Buffer) => {
        const sha = createHash('sha256').update(body).digest('hex');
        return `${prefix}/ws/.blobs/${sha.slice(0, 2)}/${sha}`;
      };
      for (const body of [large, small]) await client().send(new PutObjectCommand({ Bucket: server.bucket, Key: keyOf(body), Body: body }));
      const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
      const before = (await client().send(new HeadObjectCommand({ Bucket: server.bucket, Key: keyOf(large) }))).LastModified!;
      await new Promise((ok) => setTimeout(ok, 1100)); // LastModified has whole seconds
      const src = dir();
      writeTree(src, { 'a.bin': large, 'b.txt': 'new', 'c.txt': small });
      const pushed = await syncPush({ root: src, tree: 'ws', workspace: 'ws' }, await depsFor(config, dir()));
      // The large content is found (one HEAD) and not sent; the small ones are sent, unasked.
      expect(pushed.stats).toMatchObject({ files_uploaded: 2, files_reused: 1, bytes_transferred: 3 + small.length });
      const after = (await client().send(new HeadObjectCommand({ Bucket: server.bucket, Key: keyOf(large) }))).LastModified!;
      // s3rver keeps an object's LastModified on a copy onto itself (S3 and moto give it a new one).
      if (kind.name !== 's3rver') expect(after.getTime()).toBeGreaterThan(before.getTime());
      const dest = dir();
      await syncPull({ root: dest, tree: 'ws', workspace: 'ws' }, await depsFor(config, dir()), {});
      expect(readTree(dest)).toEqual(readTree(src));
    });

    it('pulls a version stored in the old full-copy layout; a push over it stores blobs, and both versions pull', async () => {
      const s = setup();
      const files: Record<string, string> = { 'a.txt': 'alpha', 'dir/b c+.txt': 'beta' };
      for (const [path, body] of Object.entries(files))
        await client().send(new PutObjectCommand({ Bucket: server.bucket, Key: `${s.prefix}/ws/1700000000/${path}`, Body: body }));
      const state = {
        version: '1.0',
        last_synced_at: 1700000000,
        files: Object.entries(files).map(([path, body]) => ({
          path,
          checksum: createHash('md5').update(body).digest('hex'),
          size: body.length,
          modified_at: 1700000000,
        })),
      };
      await client().send(
        new PutObjectCommand({ Bucket: server.bucket, Key: `${s.prefix}/ws/1700000000/.sandbox-state`, Body: JSON.stringify(state) }),
      );
      const here = dir();
      expect((await syncPull(s.target(here), await s.deps(), {})).stats).toMatchObject({ version: '1700000000', files_downloaded: 2 });
      expect(readTree(here)).toEqual(files);
      writeTree(here, { 'c.txt': 'new' });
      const pushed = await syncPush(s.target(here), await s.deps());
      expect(pushed.stats.files_uploaded).toBe(3);
      expect(await keys(`${s.prefix}/ws/${pushed.stats.version}/`)).toEqual([`${s.prefix}/ws/${pushed.stats.version}/.sandbox-state`]);
      const fresh = dir();
      await syncPull(s.target(fresh), await s.deps(), {});
      expect(readTree(fresh)).toEqual({ ...files, 'c.txt': 'new' });
      await syncPull(s.target(fresh), await s.deps(), { version: '1700000000' });
      expect(readTree(fresh)).toEqual(files);
    });

    it('lists a tree of more than 1,000 keys (a push, then a no-op push over it)', async () => {
      const s = setup();
      const src = dir();
      writeTree(src, Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`d${i % 10}/f${i}`, `${i}`])));
      const first = await syncPush(s.target(src), await s.deps());
      expect(first.stats.files_uploaded).toBe(1001);
      const again = await syncPush(s.target(src), await s.deps());
      expect(again.stats).toMatchObject({ version: null, files_skipped: 1001 });
      expect((await syncVersions(s.target(src), await s.deps())).versions).toMatchObject([
        { version: first.stats.version, files: 1001, status: 'complete' },
      ]);
    }, 60_000);

    // moto takes any credentials: only s3rver can refuse them.
    it.skipIf(kind.name === 'moto')('fails on bad or missing credentials before any transfer, with the fix', async () => {
      const s = setup();
      const src = dir();
      writeTree(src, { 'a.txt': 'a' });
      process.env['AWS_SECRET_ACCESS_KEY'] = 'wrong';
      process.env['AWS_ACCESS_KEY_ID'] = 'NOT-S3RVER';
      try {
        await expect(syncPush(s.target(src), await s.deps())).rejects.toMatchObject({
          exitCode: 3,
          message: expect.stringMatching(/credentials were refused .*InvalidAccessKeyId/),
        });
        delete process.env['AWS_SECRET_ACCESS_KEY'];
        delete process.env['AWS_ACCESS_KEY_ID'];
        await expect(syncPull(s.target(dir()), await s.deps(), {})).rejects.toMatchObject({
          exitCode: 3,
          hint: expect.stringMatching(/AWS_ACCESS_KEY_ID/),
        });
      } finally {
        Object.assign(process.env, S3RVER_ENV);
      }
      expect(await keys(`${s.prefix}/`)).toEqual([]);
    });

    it('names the object and suggests a retry on network errors', async () => {
      const config = configWith({
        store: 's3://nobody-listens/x',
        retries: 1,
        s3: { endpoint: 'http://127.0.0.1:9', force_path_style: true },
      });
      const src = dir();
      writeTree(src, { 'a.txt': 'a' });
      await expect(syncPush({ root: src, tree: 'ws', workspace: 'ws' }, await depsFor(config, dir()))).rejects.toMatchObject({
        // A push's first request is the listing of the tree's versions, before the folder is scanned.
        message: expect.stringMatching(/network error on a listing of x\/ws\/ \(s3:\/\/nobody-listens\/x\).*ECONNREFUSED/),
        hint: expect.stringMatching(/run the command again/),
      });
    });

    it('refuses hostile keys in a stored state and writes nothing outside the workspace', async () => {
      const s = setup();
      const parent = dir();
      const ws = join(parent, 'ws');
      mkdirSync(join(parent, 'outside'));
      const files = [{ path: '../outside/evil.txt', checksum: createHash('md5').update('x').digest('hex'), size: 1, modified_at: 1 }];
      await client().send(
        new PutObjectCommand({
          Bucket: server.bucket,
          Key: `${s.prefix}/ws/100/.sandbox-state`,
          Body: JSON.stringify({ version: '1.0', last_synced_at: 1, files }),
        }),
      );
      await client().send(new PutObjectCommand({ Bucket: server.bucket, Key: `${s.prefix}/ws/outside/evil.txt`, Body: 'x' }));
      await expect(syncPull(s.target(ws), await s.deps(), { force: true })).rejects.toThrow(
        /paths atlas refuses to write: "\.\.\/outside\/evil.txt" has a "\.\." segment/,
      );
      expect(readTree(parent)).toEqual({});
    });
  });

  describe.skipIf(kind.skip !== undefined)(`S3 store errors (${kind.name})`, () => {
    beforeAll(async () => {
      server = await kind.start();
    }, 40_000);
    afterAll(() => server?.stop());

    it('says when the bucket does not exist, before any transfer', async () => {
      const config = configWith({ store: 's3://no-such-bucket/x', s3: { endpoint: server.endpoint, force_path_style: true } });
      const src = dir();
      writeTree(src, { 'a.txt': 'a' });
      await expect(syncPush({ root: src, tree: 'ws', workspace: 'ws' }, await depsFor(config, dir()))).rejects.toMatchObject({
        exitCode: 4,
        message: expect.stringMatching(/bucket of s3:\/\/no-such-bucket\/x does not exist/),
      });
    });

    it('a version whose objects vanished: pull names the object; push sends the content again', async () => {
      const s = setup();
      const src = dir();
      writeTree(src, { 'a.txt': 'alpha', 'b.txt': 'beta' });
      await syncPush(s.target(src), await s.deps());
      const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
      // Both contents are in one pack; without it, a pull looks for each as a blob of its own, and names the one it lacks.
      const [pack] = await keys(`${s.prefix}/ws/.blobs/`);
      await client().send(new DeleteObjectCommand({ Bucket: server.bucket, Key: pack! }));
      const blob = (text: string) => createHash('sha256').update(text).digest('hex');
      const key = `${s.prefix}/ws/.blobs/(${blob('alpha').slice(0, 2)}/${blob('alpha')}|${blob('beta').slice(0, 2)}/${blob('beta')})`;
      await expect(syncPull(s.target(dir()), await s.deps(), {})).rejects.toThrow(new RegExp(`S3 error on ${key} .*NoSuchKey`));
      // A push trusts the newest version for what the store holds: it re-sends a lost content only when the file changes.
      writeTree(src, { 'c.txt': 'new', 'a.txt': 'alpha2', 'b.txt': 'beta2' });
      const second = await syncPush(s.target(src), await s.deps());
      expect(second.stats).toMatchObject({ files_uploaded: 3, files_reused: 0 });
      const dest = dir();
      await syncPull(s.target(dest), await s.deps(), {});
      expect(readTree(dest)).toEqual(readTree(src));
    });
  });
}

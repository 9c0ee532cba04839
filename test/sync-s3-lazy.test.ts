// A sync against a path-style S3 endpoint with the environment's keys sends every request of a
// push, a pull and a listing hand-signed and never loads the AWS SDK (src/sync/stores/s3-sdk.ts);
// with any other source of credentials the SDK signs as before. The hand-signed shape is the
// SDK's own for the same settings, and its listing reader takes what S3 sends and nothing else.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { parseListPage, xmlText } from '../src/sync/stores/s3-list-xml.js';
import { envCredentials, shapeFromSettings, shapeOf } from '../src/sync/stores/s3-shape.js';
import { S3Store } from '../src/sync/stores/s3-store.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { motoMissing, startMoto } from './helpers/moto.js';
import { S3RVER_ENV } from './helpers/s3rver.js';
import { s3rverBehindProxy } from './helpers/s3rver-proxied.js';
import { configWith, depsFor, readTree, scratch, writeTree } from './helpers/sync-fixtures.js';

const s3 = s3rverBehindProxy('atlas-lazy', { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }, ['AWS_PROFILE']);

const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
const configAt = (prefix: string) =>
  configWith({ store: `s3://${s3.server.bucket}/${prefix}`, s3: { endpoint: s3.proxy.endpoint, force_path_style: true } });

/** A push of `src`, a push after its a.txt changed, and a pull into a new folder, checked equal. */
async function pushChangePull(config: ReturnType<typeof configAt>, src: string) {
  const deps = await depsFor(config, scratch());
  await syncPush(target(src), deps);
  writeFileSync(join(src, 'a.txt'), 'alpha, changed');
  await syncPush(target(src), deps);
  const dest = scratch();
  await syncPull(target(dest), deps, {});
  expect(readTree(dest)).toEqual(readTree(src));
  return { deps, dest };
}

describe('the hand-signed path end to end (s3rver)', () => {
  it('a push, a push after a change, a pull and a no-op pull send no request through the SDK, nor load it', async () => {
    const config = configAt('lazy');
    const src = scratch();
    // One file large enough to be asked about (a HEAD) before it is sent.
    writeTree(src, { 'a.txt': 'alpha', 'd/b & <c>.txt': 'beta', 'big.bin': Buffer.alloc(2 * 1024 * 1024, 7) });
    const before = { requests: s3.proxy.requests, fromSdk: s3.proxy.fromSdk };
    const { deps, dest } = await pushChangePull(config, src);
    await syncPull(target(dest), deps, { force: true });
    expect(s3.proxy.requests - before.requests).toBeGreaterThan(10);
    expect(s3.proxy.fromSdk - before.fromSdk).toBe(0);
    // The store's own client was never made.
    const store = new S3Store(s3.server.bucket, 'lazy', config.sync.s3);
    expect(await store.listVersionNames('ws')).toHaveLength(2);
    expect(await store.listLocks('ws')).toEqual([]);
    expect((store as unknown as { sdk: { client: unknown } }).sdk.client).toBeUndefined();
  }, 60_000);

  it("with AWS_PROFILE set, the SDK's provider chain finds the profile's keys (not the environment's), and every request is signed with them", async () => {
    const home = scratch();
    const credentials = join(home, 'credentials');
    writeFileSync(credentials, '[atlas-lazy]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n');
    process.env['AWS_SHARED_CREDENTIALS_FILE'] = credentials;
    process.env['AWS_PROFILE'] = 'atlas-lazy';
    // Keys s3rver does not know: the SDK's chain skips them for the profile's, and so must atlas.
    process.env['AWS_ACCESS_KEY_ID'] = 'NOTTHESEKEYS';
    s3.proxy.accessKeys.clear();
    try {
      expect(envCredentials()).toBeUndefined();
      const src = scratch();
      writeTree(src, { 'a.txt': 'alpha' });
      const deps = await depsFor(configAt('profile'), home);
      await syncPush(target(src), deps);
      const dest = scratch();
      await syncPull(target(dest), deps, {});
      expect(readTree(dest)).toEqual(readTree(src));
      expect([...s3.proxy.accessKeys]).toEqual(['S3RVER']);
    } finally {
      delete process.env['AWS_PROFILE'];
      process.env['AWS_ACCESS_KEY_ID'] = S3RVER_ENV.AWS_ACCESS_KEY_ID;
      process.env['AWS_SHARED_CREDENTIALS_FILE'] = '/nonexistent';
    }
  }, 60_000);

  it("a server that refuses the hand-signed requests gets the SDK's, once it refused one: push, pull, HEAD, locks, state", async () => {
    const config = configAt('sdk-only');
    const src = scratch();
    writeTree(src, { 'a.txt': 'alpha', 'big.bin': Buffer.alloc(2 * 1024 * 1024, 3) });
    s3.proxy.mode = 'sdk-only';
    s3.proxy.failed = 0;
    try {
      await pushChangePull(config, src);
      const store = new S3Store(s3.server.bucket, 'sdk-only', config.sync.s3);
      expect(await store.readState('ws', '1')).toBeUndefined();
      expect(await store.blobModifiedMs('ws', 'a'.repeat(64))).toBeUndefined();
      // Each store refused once, then sent everything through the SDK: one refusal per store opened.
      expect(s3.proxy.failed).toBeLessThanOrEqual(4);
    } finally {
      s3.proxy.mode = 'pass';
    }
  }, 60_000);

  it.skipIf(motoMissing() !== undefined)(
    'on moto, which honours If-None-Match, a version name taken is refused by the hand-signed PUT itself',
    async () => {
      const moto = await startMoto('atlas-lazy');
      try {
        const store = new S3Store(moto.bucket, 'taken', { endpoint: moto.endpoint, force_path_style: true, region: 'us-east-1' });
        const manifest = '{"version":"1","last_synced_at":1,"files":[]}';
        expect(await store.commitVersion('ws', '1795850000', manifest)).toBe(true);
        expect(await store.commitVersion('ws', '1795850000', manifest)).toBe(false);
        expect(await store.listVersionNames('ws')).toEqual(['1795850000']);
        expect((store as unknown as { sdk: { client: unknown } }).sdk.client).toBeUndefined();
      } finally {
        await moto.stop();
      }
    },
    60_000,
  );

  it('a listing the hand-signed path cannot read goes through the SDK, which names what is wrong', async () => {
    const odd = createServer((req, res) => {
      if (req.headers['amz-sdk-invocation-id'])
        return void res.writeHead(403).end('<Error><Code>AccessDenied</Code><Message>no</Message></Error>');
      res.writeHead(200, { 'content-type': 'application/xml' }).end('<html>a portal page</html>');
    });
    await new Promise<void>((ok) => odd.listen(0, '127.0.0.1', ok));
    try {
      const endpoint = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
      const store = new S3Store('bucket', 'p', { endpoint, force_path_style: true, region: 'us-east-1' }, 0);
      await expect(store.listVersionNames('ws')).rejects.toThrow(/access denied to a listing of p\/ws\//);
    } finally {
      odd.closeAllConnections();
      await new Promise((ok) => odd.close(ok));
    }
  });
});

describe('the shape from the settings', () => {
  /** The shape the SDK itself gives a GetObject of `key` with these settings. */
  async function sdkShape(endpoint: string, bucket: string, key: string) {
    const client = new S3Client({
      region: 'eu-west-3',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    let seen: Parameters<typeof shapeOf>[0] | undefined;
    client.middlewareStack.add(
      (_next) => async (args) => {
        seen = args.request as Parameters<typeof shapeOf>[0];
        throw new Error('not sent');
      },
      { step: 'deserialize', priority: 'low', name: 'capture' },
    );
    await client.send(new GetObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
    return shapeOf(seen!, key);
  }

  it("is the SDK's own for a path-style endpoint, with or without a path and a port", async () => {
    for (const endpoint of [
      'http://127.0.0.1:9000',
      'http://127.0.0.1:9000/',
      'https://minio.example/s3/base/',
      'https://[::1]:8443',
      'http://h.example:80',
    ]) {
      for (const bucket of ['atlas', 'my.dotted-bucket']) {
        const settings = { endpoint, force_path_style: true, region: 'eu-west-3' };
        expect(shapeFromSettings(settings, bucket), `${endpoint} ${bucket}`).toEqual(await sdkShape(endpoint, bucket, 'p/a b.txt'));
      }
    }
  });

  it('is left to the SDK for AWS itself, virtual-hosted names, odd buckets and endpoints', () => {
    const base = { endpoint: 'http://127.0.0.1:9000', force_path_style: true, region: '' };
    expect(shapeFromSettings({ ...base, endpoint: '' }, 'atlas')).toBeUndefined();
    expect(shapeFromSettings({ ...base, force_path_style: false }, 'atlas')).toBeUndefined();
    for (const bucket of ['Upper', 'under_score', 'a', 'arn:aws:s3:::x']) expect(shapeFromSettings(base, bucket)).toBeUndefined();
    for (const endpoint of ['not a url', 'ftp://h/', 'http://h/?x=1', 'http://u:p@h/'])
      expect(shapeFromSettings({ ...base, endpoint }, 'atlas')).toBeUndefined();
    expect(shapeFromSettings(base, 'atlas', { AWS_DEFAULT_REGION: 'ap-south-1' })?.region).toBe('ap-south-1');
    expect(shapeFromSettings(base, 'atlas', {})?.region).toBe('us-east-1');
  });

  it("takes the environment's keys only where the SDK's chain would", () => {
    const keys = { AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK' };
    expect(envCredentials(keys)).toEqual({ accessKeyId: 'AK', secretAccessKey: 'SK' });
    expect(envCredentials({ ...keys, AWS_SESSION_TOKEN: 'T' })).toEqual({ accessKeyId: 'AK', secretAccessKey: 'SK', sessionToken: 'T' });
    expect(envCredentials({ ...keys, AWS_PROFILE: 'work' })).toBeUndefined();
    expect(envCredentials({ AWS_ACCESS_KEY_ID: 'AK' })).toBeUndefined();
  });
});

describe('the listing reader', () => {
  const page = (inner: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>${inner}</ListBucketResult>`;
  const object = (key: string) =>
    `<Contents><Key>${key}</Key><LastModified>2026-11-28T07:00:00.000Z</LastModified><Size>12</Size></Contents>`;

  it('reads objects, folders and the next page, entities decoded', () => {
    expect(
      parseListPage(
        page(
          `<IsTruncated>true</IsTruncated>${object('p/a &amp; b &lt;c&gt; &#233;&#x1F600;')}<CommonPrefixes><Prefix>p/d &quot;q&quot;/</Prefix></CommonPrefixes><NextContinuationToken>t&amp;1</NextContinuationToken>`,
        ),
      ),
    ).toEqual({
      objects: [{ key: 'p/a & b <c> é😀', size: 12, modifiedMs: Date.parse('2026-11-28T07:00:00.000Z') }],
      folders: ['p/d "q"/'],
      next: 't&1',
    });
    expect(parseListPage(page('<IsTruncated>false</IsTruncated>'))).toEqual({ objects: [], folders: [], next: undefined });
  });

  it('refuses what is not such a page, for the SDK to name', () => {
    for (const bad of [
      '<html></html>',
      page(''), // no IsTruncated
      page('<IsTruncated>true</IsTruncated>'), // truncated without a token
      page(`<IsTruncated>false</IsTruncated>${object('a &nbsp; b')}`), // an entity XML does not have
      page(`<IsTruncated>false</IsTruncated>${object('a & b')}`),
      page('<IsTruncated>false</IsTruncated><EncodingType>url</EncodingType>'),
      page(
        '<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>-1</Size><LastModified>2026-11-28T07:00:00Z</LastModified></Contents>',
      ),
      page('<IsTruncated>false</IsTruncated><Contents><Key>k</Key><LastModified>yesterday</LastModified></Contents>'),
      page('<IsTruncated>false</IsTruncated><CommonPrefixes></CommonPrefixes>'),
    ])
      expect(parseListPage(bad), bad).toBeUndefined();
    expect(xmlText('&#0;')).toBeUndefined();
    expect(xmlText('&#x110000;')).toBeUndefined();
  });
});

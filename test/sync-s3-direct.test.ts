// The pull's GetObject and the push's PutObject of small blobs without the SDK's middleware (src/sync/stores/s3-direct.ts): SigV4 checked
// against AWS's published example and the SDK's own signer, the request shape learned from the
// SDK's request, and every answer but 200 left to the SDK, against a real s3rver and a server
// that misbehaves. (s3rver does not check signatures: the two signing vectors are what does.)
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectRequests } from '../src/sync/stores/s3-direct.js';
import { shapeOf } from '../src/sync/stores/s3-shape.js';
import { encodeKey, signV4 } from '../src/sync/stores/s3-sign.js';
import type { S3Server } from './helpers/s3rver.js';
import { sdkOf, startS3rver } from './helpers/s3rver.js';

// The SDK's warning about its own future Node requirement is noise here (S3Store silences it too).
process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';

const EXAMPLE = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('signV4', () => {
  it("matches AWS's published GET Object example", () => {
    const headers = {
      host: 'examplebucket.s3.amazonaws.com',
      range: 'bytes=0-9',
      'x-amz-content-sha256': EMPTY_SHA256,
      'x-amz-date': '20130524T000000Z',
    };
    expect(
      signV4({
        method: 'GET',
        path: '/test.txt',
        headers,
        payloadHash: EMPTY_SHA256,
        region: 'us-east-1',
        service: 's3',
        credentials: EXAMPLE,
        amzDate: '20130524T000000Z',
      }),
    ).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it("matches AWS's published PUT Object example (a signed payload hash, as a blob's PUT carries)", () => {
    const payloadHash = '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072';
    expect(createHash('sha256').update('Welcome to Amazon S3.').digest('hex')).toBe(payloadHash);
    const headers = {
      date: 'Fri, 24 May 2013 00:00:00 GMT',
      host: 'examplebucket.s3.amazonaws.com',
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': '20130524T000000Z',
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    };
    expect(
      signV4({
        method: 'PUT',
        path: '/test%24file.text',
        headers,
        payloadHash,
        region: 'us-east-1',
        service: 's3',
        credentials: EXAMPLE,
        amzDate: '20130524T000000Z',
      }),
    ).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd',
    );
  });

  it("matches the SDK's signer with a session token, an encoded path and a port", () => {
    // Expected value computed with @smithy/signature-v4 (uriEscapePath: false, as S3 signs).
    const headers = {
      host: 'x.example:9000',
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      'x-amz-date': '20260102T030405Z',
      'x-amz-security-token': 'tok/+=',
    };
    const auth = signV4({
      method: 'GET',
      path: '/b/a%20b/c%2B%25.txt',
      headers,
      payloadHash: 'UNSIGNED-PAYLOAD',
      region: 'eu-west-1',
      service: 's3',
      credentials: { ...EXAMPLE, sessionToken: 'tok/+=' },
      amzDate: '20260102T030405Z',
    });
    expect(auth).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260102/eu-west-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=42e18ddd34821b3ffea79044b587f3e000af1abc402066689ea28319b2016878',
    );
  });
});

describe('shapeOf', () => {
  const signed = (path: string, extra: Record<string, string> = {}) => ({
    protocol: 'https:',
    hostname: 'bucket.s3.eu-west-1.amazonaws.com',
    path,
    headers: {
      Host: 'bucket.s3.eu-west-1.amazonaws.com',
      Authorization: 'AWS4-HMAC-SHA256 Credential=AK/20260102/eu-west-1/s3/aws4_request, SignedHeaders=host, Signature=00',
      ...extra,
    },
  });

  it('encodes keys segment by segment, as S3 paths carry them', () => {
    expect(encodeKey("p/a b/c+%!*'().txt")).toBe('p/a%20b/c%2B%25%21%2A%27%28%29.txt');
  });

  it('learns the path in front of the key, the host and the signing scope', () => {
    expect(shapeOf(signed('/p/a%20b.txt'), 'p/a b.txt')).toEqual({
      protocol: 'https:',
      hostname: 'bucket.s3.eu-west-1.amazonaws.com',
      host: 'bucket.s3.eu-west-1.amazonaws.com',
      base: '/',
      region: 'eu-west-1',
      service: 's3',
    });
    expect(shapeOf({ ...signed('/bucket/p/x'), protocol: 'http:', port: 9000 }, 'p/x')).toMatchObject({
      protocol: 'http:',
      port: 9000,
      base: '/bucket/',
    });
  });

  it('leaves to the SDK what it cannot copy', () => {
    expect(shapeOf(signed('/p/other'), 'p/x')).toBeUndefined();
    expect(shapeOf({ ...signed('/p/x'), headers: { host: 'h' } }, 'p/x')).toBeUndefined();
    expect(shapeOf({ ...signed('/p/x'), protocol: 'ftp:' }, 'p/x')).toBeUndefined();
    expect(shapeOf(signed('/p/x', { 'X-Amz-S3session-Token': 't' }), 'p/x')).toBeUndefined();
    expect(
      shapeOf(signed('/p/x', { Authorization: 'AWS4-ECDSA-P256-SHA256 Credential=AK/20260102/s3/aws4_request, x' }), 'p/x'),
    ).toBeUndefined();
  });
});

describe('DirectRequests against s3rver', () => {
  let server: S3Server;
  beforeAll(async () => {
    server = await startS3rver();
  }, 20_000);
  afterAll(async () => {
    await server?.stop();
  });

  const clientOf = (endpoint: string, secretAccessKey = 'S3RVER') =>
    new S3Client({
      region: 'us-east-1',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey },
      cacheMiddleware: true,
    });
  const text = async (body: AsyncIterable<Buffer>) => {
    const parts: Buffer[] = [];
    for await (const part of body) parts.push(part);
    return Buffer.concat(parts).toString('utf8');
  };

  it('is used only after the SDK sent a GetObject, then fetches with a signature the server accepts', async () => {
    const client = clientOf(server.endpoint);
    const direct = new DirectRequests(await sdkOf(client));
    const keys = ['f/state', 'f/a b+c%.txt', "f/(x)!*'.txt"];
    for (const key of keys) await client.send(new PutObjectCommand({ Bucket: server.bucket, Key: key, Body: `content of ${key}` }));
    expect(await direct.get('f/state')).toBeUndefined();
    await text((await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: 'f/state' }))).Body as AsyncIterable<Buffer>);
    for (const key of keys) expect(await text((await direct.get(key))!)).toBe(`content of ${key}`);
  });

  it('puts a small object with its Content-MD5 and SHA-256 once the shape is known', async () => {
    const client = clientOf(server.endpoint);
    const direct = new DirectRequests(await sdkOf(client));
    const body = Buffer.from('a blob');
    const md5 = createHash('md5').update(body).digest('base64');
    const sha = createHash('sha256').update(body).digest('hex');
    expect(await direct.put('p/blob', body, md5, sha)).toBe(false); // no GetObject yet: the SDK's
    await client.send(new PutObjectCommand({ Bucket: server.bucket, Key: 'p/state', Body: 's' }));
    await text((await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: 'p/state' }))).Body as AsyncIterable<Buffer>);
    expect(await direct.put('p/blob', body, md5, sha)).toBe(true);
    expect(
      await text((await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: 'p/blob' }))).Body as AsyncIterable<Buffer>),
    ).toBe('a blob');
  });

  it('a PUT refused (a bad digest, a denied signature) is left to the SDK, and so is every later one', async () => {
    const seen: { method: string; headers: Record<string, unknown>; bytes: number }[] = [];
    const strict = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (d: Buffer) => (bytes += d.length));
      req.on('end', () => {
        seen.push({ method: req.method!, headers: req.headers, bytes });
        if (req.method === 'PUT') res.writeHead(400).end('<Error><Code>BadDigest</Code></Error>');
        else res.writeHead(200).end('state');
      });
    });
    await new Promise<void>((ok) => strict.listen(0, '127.0.0.1', ok));
    try {
      const client = clientOf(`http://127.0.0.1:${(strict.address() as AddressInfo).port}`);
      const direct = new DirectRequests(await sdkOf(client));
      await text((await client.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'k/state' }))).Body as AsyncIterable<Buffer>);
      const body = Buffer.from('bytes');
      expect(
        await direct.put('k/a', body, createHash('md5').update(body).digest('base64'), createHash('sha256').update(body).digest('hex')),
      ).toBe(false);
      expect(seen[1]).toMatchObject({
        method: 'PUT',
        bytes: 5,
        headers: {
          'content-md5': createHash('md5').update(body).digest('base64'),
          'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
        },
      });
      expect(seen[1]!.headers['user-agent']).toBeUndefined();
      expect(await direct.put('k/b', body, 'x', 'y')).toBe(false);
      expect(seen).toHaveLength(2);
    } finally {
      strict.closeAllConnections();
      await new Promise((ok) => strict.close(ok));
    }
  });

  it('leaves a missing object, then everything, to the SDK', async () => {
    const client = clientOf(server.endpoint);
    const direct = new DirectRequests(await sdkOf(client));
    await client.send(new PutObjectCommand({ Bucket: server.bucket, Key: 'g/a', Body: 'a' }));
    await text((await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: 'g/a' }))).Body as AsyncIterable<Buffer>);
    expect(await direct.get('g/missing')).toBeUndefined();
    expect(await direct.get('g/a')).toBeUndefined();
  });

  it('a connection that fails before an answer, or a server error, is tried again here, the last failure thrown', async () => {
    let calls = 0;
    const flaky = createServer((req, res) => {
      calls++;
      if (calls === 2) return void req.socket.destroy(); // the first try of 'k/b'
      if (calls === 4) return void res.writeHead(503).end('<Error><Code>SlowDown</Code></Error>'); // the first of 'k/c'
      if (req.url === '/bucket/k/d') return void res.writeHead(500).end('<Error><Code>InternalError</Code><Message>down</Message></Error>');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`body ${req.url}`);
    });
    await new Promise<void>((ok) => flaky.listen(0, '127.0.0.1', ok));
    try {
      const client = clientOf(`http://127.0.0.1:${(flaky.address() as AddressInfo).port}`);
      const direct = new DirectRequests(await sdkOf(client), undefined, { attempts: 2 });
      await text((await client.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'k/a' }))).Body as AsyncIterable<Buffer>);
      expect(await text((await direct.get('k/b'))!)).toBe('body /bucket/k/b');
      expect(await text((await direct.get('k/c'))!)).toBe('body /bucket/k/c');
      // Past its attempts, the server's own error, as the SDK would report it.
      const before = calls;
      await expect(direct.get('k/d')).rejects.toMatchObject({ name: 'InternalError', message: 'down', $metadata: { httpStatusCode: 500 } });
      expect(calls - before).toBe(2);
      // A server error was that request's: this path stays on.
      expect(await text((await direct.get('k/a'))!)).toBe('body /bucket/k/a');
    } finally {
      flaky.closeAllConnections();
      await new Promise((ok) => flaky.close(ok));
    }
  });
});

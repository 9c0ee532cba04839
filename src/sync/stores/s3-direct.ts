// GetObject without the SDK's per-request machinery, for the thousands of downloads of a pull,
// and PutObject of small blobs for a push (1,000 of them after 1% of 100,000 files changed: each
// also carries ~400 bytes fewer headers than the SDK's, which a push's bytes on the wire count).
// Measured against s3rver: 2,000 GetObjects cost ~2 ms of CPU each through the SDK (a chain of
// ~30 middlewares, endpoint rules, config copies, XML parsing) and ~0.6 ms as one signed HTTP
// request, which made the SDK the largest part of a pull's CPU (docs/performance.md#workspace-sync).
//
// The SDK still decides everything: the shape of a request (scheme, host, port, the path in front
// of the key, signing region and service) is learned from a GetObject the SDK itself sent and
// signed with plain SigV4 (push and pull read the newest .sandbox-state that way before any
// transfer); the credentials come from the SDK's provider chain. An answer other than 200, or a
// failure before one, sends that request through the SDK again, which retries and names the error
// as before; an answer that is neither 200 nor a server error also turns this path off for the
// rest of the run. Downloads are checked against the version's hashes either way.
import { createHash, createHmac } from 'node:crypto';
import type { Agent, IncomingMessage, RequestOptions } from 'node:http';
import * as http from 'node:http';
import * as https from 'node:https';
import type { S3Client } from '@aws-sdk/client-s3';
import type { RequestTimeouts } from './s3-timeouts.js';
import { DEFAULT_TIMEOUTS, timeoutError } from './s3-timeouts.js';

/** What the SDK's own GetObject looked like, to make the same requests. */
export interface GetShape {
  protocol: 'http:' | 'https:';
  hostname: string;
  port?: number;
  host: string;
  /** The path in front of the encoded key ("/bucket/" path-style, "/" virtual-hosted). */
  base: string;
  region: string;
  service: string;
}

const UNSIGNED = 'UNSIGNED-PAYLOAD';

/** A key as S3 paths carry it: each segment URI-encoded (as the SDK does), slashes kept. */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
}

/** The shape of a signed SDK request for `key`, or undefined when it is not one this path can copy. */
export function shapeOf(
  request: { protocol?: string; hostname?: string; port?: number; path?: string; headers?: Record<string, string> },
  key: string,
): GetShape | undefined {
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const auth = /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request,/.exec(headers['authorization'] ?? '');
  const encoded = encodeKey(key);
  const path = request.path ?? '';
  if (!auth || !headers['host'] || !request.hostname || !path.endsWith(encoded)) return undefined;
  if (request.protocol !== 'http:' && request.protocol !== 'https:') return undefined;
  // Session auth of S3 Express and the like: leave those to the SDK.
  if (Object.keys(headers).some((h) => h === 'x-amz-s3session-token' || h.startsWith('x-amz-server-side-encryption-customer')))
    return undefined;
  return {
    protocol: request.protocol,
    hostname: request.hostname,
    ...(request.port ? { port: request.port } : {}),
    host: headers['host'],
    base: path.slice(0, path.length - encoded.length),
    region: auth[1]!,
    service: auth[2]!,
  };
}

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

const keyCache = new Map<string, Buffer>();

/** AWS Signature Version 4 of a request without a query; `headers` in lower case, all signed. */
export function signV4(input: {
  method: string;
  path: string;
  headers: Record<string, string>;
  payloadHash: string;
  region: string;
  service: string;
  credentials: Credentials;
  amzDate: string;
}): string {
  const { credentials, region, service, amzDate } = input;
  const day = amzDate.slice(0, 8);
  const names = Object.keys(input.headers).sort();
  const canonical = [
    input.method,
    input.path,
    '',
    ...names.map((n) => `${n}:${input.headers[n]!.trim()}`),
    '',
    names.join(';'),
    input.payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  const cacheKey = `${credentials.secretAccessKey}\0${scope}`;
  let signingKey = keyCache.get(cacheKey);
  if (!signingKey) {
    signingKey = [day, region, service, 'aws4_request'].reduce<Buffer>(
      (k, part) => createHmac('sha256', k).update(part).digest(),
      Buffer.from(`AWS4${credentials.secretAccessKey}`),
    );
    keyCache.clear(); // one scope a day per store: no need to keep older ones
    keyCache.set(cacheKey, signingKey);
  }
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
}

function amzDateOf(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export class DirectRequests {
  private shape: GetShape | undefined;
  private off = false;
  private agent: Agent | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly timeouts: RequestTimeouts = DEFAULT_TIMEOUTS,
  ) {
    // Runs last before the request goes out (the deserialize step wraps the sending), when the
    // request is signed: only its shape is kept, once.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: unknown };
        if (!this.shape && !this.off && context.commandName === 'GetObjectCommand' && typeof input.Key === 'string') {
          this.shape = shapeOf(args.request as Parameters<typeof shapeOf>[0], input.Key);
        }
        return next(args);
      },
      { step: 'deserialize', priority: 'low', name: 'atlasLearnRequestShape' },
    );
  }

  /**
   * The object's body (of `range`, "bytes=a-b", when given) when it came back 200 (or 206 for a
   * range), or undefined: then the caller uses the SDK.
   */
  async get(key: string, range?: string): Promise<IncomingMessage | undefined> {
    const response = await this.send('GET', key, range ? { range } : {});
    if (!response) return undefined;
    if (response.statusCode === 200 || (range && response.statusCode === 206)) return response;
    response.resume();
    // A server error is this request's: the SDK retries it. Anything else (403, 404, a redirect)
    // says this path is wrong for the store, and the rest of the run goes through the SDK.
    if ((response.statusCode ?? 0) < 500) this.off = true;
    return undefined;
  }

  /**
   * Stores a small object (a blob) as one signed PUT carrying only what S3 needs: its length, its
   * Content-MD5 (the server checks the bytes) and its SHA-256 as the signed payload hash (the server
   * checks that too). True when it came back 200; false leaves it to the SDK, as for get().
   */
  async put(key: string, body: Buffer, md5Base64: string, sha256Hex: string): Promise<boolean> {
    const response = await this.send(
      'PUT',
      key,
      { 'content-length': String(body.length), 'content-md5': md5Base64 },
      { body, payloadHash: sha256Hex },
    );
    if (!response) return false;
    response.resume();
    if (response.statusCode === 200) return true;
    if ((response.statusCode ?? 0) < 500) this.off = true;
    return false;
  }

  private async send(
    method: 'GET' | 'PUT',
    key: string,
    extra: Record<string, string> = {},
    payload?: { body: Buffer; payloadHash: string },
  ): Promise<IncomingMessage | undefined> {
    const shape = this.shape;
    if (!shape || this.off) return undefined;
    try {
      return await this.request(shape, method, key, extra, payload);
    } catch {
      return undefined;
    }
  }

  private async request(
    shape: GetShape,
    method: 'GET' | 'PUT',
    key: string,
    extra: Record<string, string>,
    payload?: { body: Buffer; payloadHash: string },
  ): Promise<IncomingMessage> {
    const credentials = await this.client.config.credentials();
    const path = `${shape.base}${encodeKey(key)}`;
    const offset = (this.client.config as { systemClockOffset?: number }).systemClockOffset ?? 0;
    const payloadHash = payload?.payloadHash ?? UNSIGNED;
    const headers: Record<string, string> = {
      ...extra,
      host: shape.host,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': amzDateOf(Date.now() + offset),
    };
    if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
    headers['authorization'] = signV4({
      method,
      path,
      headers,
      payloadHash,
      region: shape.region,
      service: shape.service,
      credentials,
      amzDate: headers['x-amz-date']!,
    });
    const lib = shape.protocol === 'https:' ? https : http;
    // Idle connections close after the same timeout: a long-lived process (the server) opens a
    // store per sync and must not collect them.
    const t = this.timeouts;
    this.agent ??= new lib.Agent({ keepAlive: true, maxSockets: 64, timeout: t.idleMs });
    const options: RequestOptions = {
      method,
      protocol: shape.protocol,
      hostname: shape.hostname,
      ...(shape.port ? { port: shape.port } : {}),
      path,
      headers,
      agent: this.agent,
    };
    return new Promise((resolve, reject) => {
      const req = lib.request(options, resolve);
      // The whole request, its answer's body included (a body that trickles never goes idle).
      const whole = setTimeout(() => req.destroy(timeoutError(`${method} ${key}`, t.requestMs)), t.requestMs);
      whole.unref();
      req.once('close', () => clearTimeout(whole));
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        const connect = setTimeout(() => req.destroy(timeoutError(`the connection for ${method} ${key}`, t.connectMs)), t.connectMs);
        socket.once('connect', () => clearTimeout(connect));
        req.once('close', () => clearTimeout(connect));
      });
      req.setTimeout(t.idleMs, () => req.destroy(timeoutError(`${method} ${key} without data`, t.idleMs)));
      req.on('error', reject);
      req.end(payload?.body);
    });
  }
}

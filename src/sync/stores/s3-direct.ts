// The requests of an everyday push and pull without the SDK's per-request machinery: GetObject
// (thousands in a pull), PutObject (small blobs, locks, the manifest), HeadObject, DeleteObject and
// ListObjectsV2, each one signed HTTP request. Measured against s3rver: 2,000 GetObjects cost ~2 ms
// of CPU each through the SDK (a chain of ~30 middlewares, endpoint rules, config copies, XML
// parsing) and ~0.6 ms as one signed request; and a sync that never needs the SDK never loads it
// (s3-sdk.ts: ~6 MB and ~40 ms less per command).
//
// Where the requests go and with which credentials: s3-shape.ts. A failure that may pass (a
// server error, throttling, a timeout, a broken connection) is retried here as the SDK would (the
// same attempts and waits, s3-retry.ts), and the last one thrown for the caller to name. Any other
// answer this path does not expect (403, a redirect: it is wrong for the store) sends that request
// through the SDK, which names the error as before, and turns this path off for the rest of the
// run. Downloads are checked against the version's hashes either way.
import { createHash } from 'node:crypto';
import type { Agent, IncomingMessage, RequestOptions } from 'node:http';
import * as http from 'node:http';
import * as https from 'node:https';
import type { ListedPage } from './s3-list-xml.js';
import { parseListPage } from './s3-list-xml.js';
import { backoffMs } from './s3-retry.js';
import type { LazySdk } from './s3-sdk.js';
import type { GetShape } from './s3-shape.js';
import { shapeOf } from './s3-shape.js';
import type { Credentials } from './s3-sign.js';
import { amzDateOf, canonicalQuery, encodeKey, signV4 } from './s3-sign.js';
import type { RequestTimeouts } from './s3-timeouts.js';
import { DEFAULT_TIMEOUTS, timeoutError } from './s3-timeouts.js';

const UNSIGNED = 'UNSIGNED-PAYLOAD';
/** A listing page of 1,000 keys is ~300 KB; an answer past this is not one. */
const MAX_LISTING_BYTES = 16 * 1024 * 1024;

/** What the settings say already; the rest is learned from the SDK or asked of it. */
export interface KnownDirect {
  shape?: GetShape | undefined;
  credentials?: Credentials | undefined;
  /** Attempts per request (sync.retries + 1, s3-retry.ts); 1 by default. */
  attempts?: number;
}

interface Outgoing {
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer;
  /** The body's SHA-256 (hex), signed; UNSIGNED-PAYLOAD without a body. */
  payloadHash?: string;
}

type Method = 'GET' | 'PUT' | 'HEAD' | 'DELETE';

/** Answers that may pass, as the SDK's strategy retries them (s3-retry.ts). */
const PASSING = new Set([429, 500, 502, 503, 504]);

export class DirectRequests {
  private shape: GetShape | undefined;
  private off = false;
  private agent: Agent | undefined;

  constructor(
    private readonly sdk: LazySdk,
    private readonly timeouts: RequestTimeouts = DEFAULT_TIMEOUTS,
    private readonly known: KnownDirect = {},
  ) {
    this.shape = known.shape;
    if (this.shape) return;
    // Runs last before the request goes out (the deserialize step wraps the sending), when the
    // request is signed: only its shape is kept, once.
    sdk.whenMade((client) =>
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as { Key?: unknown };
          if (!this.shape && !this.off && context.commandName === 'GetObjectCommand' && typeof input.Key === 'string') {
            this.shape = shapeOf(args.request as Parameters<typeof shapeOf>[0], input.Key);
          }
          return next(args);
        },
        { step: 'deserialize', priority: 'low', name: 'atlasLearnRequestShape' },
      ),
    );
  }

  /**
   * The object's body (of `range`, "bytes=a-b", when given) when it came back 200 (or 206 for a
   * range), or undefined: then the caller uses the SDK.
   */
  get(key: string, range?: string): Promise<IncomingMessage | undefined> {
    return this.attempt('GET', key, range ? { headers: { range } } : {}, (response) =>
      response.statusCode === 200 || (range && response.statusCode === 206) ? response : this.unexpected(response),
    );
  }

  /** As get(), and 'missing' when the server says there is no such key. */
  getOrMissing(key: string): Promise<IncomingMessage | 'missing' | undefined> {
    return this.attempt('GET', key, {}, async (response) => {
      if (response.statusCode === 200) return response;
      if (response.statusCode !== 404) return this.unexpected(response);
      return /<Code>NoSuchKey<\/Code>/.test((await readText(response, 64 * 1024)) ?? '') ? 'missing' : undefined;
    });
  }

  /** The object's LastModified, 'missing' on a 404, or undefined: the SDK's. */
  head(key: string): Promise<number | 'missing' | undefined> {
    return this.attempt('HEAD', key, {}, (response) => {
      const modified = Date.parse(String(response.headers['last-modified']));
      if (response.statusCode === 200 && !Number.isNaN(modified)) return drained(response, modified);
      return response.statusCode === 404 ? drained(response, 'missing' as const) : this.unexpected(response);
    });
  }

  /**
   * Stores a small object (a blob) as one signed PUT carrying only what S3 needs: its length, its
   * Content-MD5 (the server checks the bytes) and its SHA-256 as the signed payload hash (the server
   * checks that too). True when it came back 200; false leaves it to the SDK, as for get().
   */
  async put(key: string, body: Buffer, md5Base64: string, sha256Hex: string): Promise<boolean> {
    return (await this.putObject(key, body, { 'content-md5': md5Base64 }, sha256Hex)) === 200;
  }

  /**
   * A PUT of `body` with `headers` (lower case): 200; with If-None-Match, 412 or 409 (the name is
   * taken) or 501 (the server does not take the condition), which are answers; or undefined: the SDK's.
   */
  putObject(key: string, body: Buffer, headers: Record<string, string>, sha256Hex?: string): Promise<200 | 409 | 412 | 501 | undefined> {
    const payloadHash = sha256Hex ?? createHash('sha256').update(body).digest('hex');
    const out = { headers: { ...headers, 'content-length': String(body.length) }, body, payloadHash };
    return this.attempt('PUT', key, out, (response) => {
      const status = response.statusCode;
      if (status === 200) return drained(response, 200 as const);
      if (headers['if-none-match'] && (status === 409 || status === 412 || status === 501)) return drained(response, status);
      return this.unexpected(response);
    });
  }

  /** A DeleteObject; false: the SDK's. */
  async remove(key: string): Promise<boolean> {
    const done = await this.attempt('DELETE', key, {}, (response) =>
      response.statusCode === 204 || response.statusCode === 200 ? drained(response, true) : this.unexpected(response),
    );
    return done === true;
  }

  /** One ListObjectsV2 page under `prefix`, or undefined: the SDK's. */
  list(prefix: string, options: { delimiter?: string; token?: string; maxKeys?: number } = {}): Promise<ListedPage | undefined> {
    const query: Record<string, string> = { 'list-type': '2', prefix };
    if (options.delimiter) query['delimiter'] = options.delimiter;
    if (options.token) query['continuation-token'] = options.token;
    if (options.maxKeys) query['max-keys'] = String(options.maxKeys);
    return this.attempt('GET', undefined, { query }, async (response) => {
      if (response.statusCode !== 200) return this.unexpected(response);
      const text = await readText(response, MAX_LISTING_BYTES);
      const page = text === undefined ? undefined : parseListPage(text);
      // A listing this path cannot read says the server is not what it looks like.
      if (!page) this.off = true;
      return page;
    });
  }

  /** An answer the caller did not expect: drained, and this path off for the rest of the run. */
  private unexpected(response: IncomingMessage): undefined {
    response.resume();
    this.off = true;
    return undefined;
  }

  /**
   * The request, with its answer handled by `handle` (a body it reads is part of the attempt),
   * tried again while it fails in a way that may pass, the last failure thrown; undefined when this
   * path does not apply: the SDK's.
   */
  private async attempt<T>(
    method: Method,
    key: string | undefined,
    out: Outgoing,
    handle: (response: IncomingMessage) => T | Promise<T>,
  ): Promise<T | undefined> {
    const attempts = Math.max(1, this.known.attempts ?? 1);
    for (let n = 0; ; n++) {
      const shape = this.shape;
      if (!shape || this.off) return undefined;
      let failure: unknown;
      try {
        const response = await this.request(shape, method, key, out);
        if (!PASSING.has(response.statusCode ?? 0)) return await handle(response);
        failure = await answerError(response);
      } catch (error) {
        failure = error;
      }
      if (n + 1 >= attempts) throw failure;
      await new Promise((ok) => setTimeout(ok, backoffMs(n)));
    }
  }

  private async request(shape: GetShape, method: Method, key: string | undefined, out: Outgoing): Promise<IncomingMessage> {
    const credentials = this.known.credentials ?? (await (await this.sdk.get()).client.config.credentials());
    const path = key === undefined ? shape.base : `${shape.base}${encodeKey(key)}`;
    const query = out.query ? canonicalQuery(out.query) : '';
    const offset = (this.sdk.client?.config as { systemClockOffset?: number } | undefined)?.systemClockOffset ?? 0;
    const payloadHash = out.payloadHash ?? (out.body ? createHash('sha256').update(out.body).digest('hex') : UNSIGNED);
    const headers: Record<string, string> = {
      ...out.headers,
      host: shape.host,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': amzDateOf(Date.now() + offset),
    };
    if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
    headers['authorization'] = signV4({
      method,
      path,
      query,
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
    const what = `${method} ${key ?? 'listing'}`;
    const options: RequestOptions = {
      method,
      protocol: shape.protocol,
      hostname: shape.hostname,
      ...(shape.port ? { port: shape.port } : {}),
      path: query ? `${path}?${query}` : path,
      headers,
      agent: this.agent,
    };
    return new Promise((resolve, reject) => {
      let answer: IncomingMessage | undefined;
      const req = lib.request(options, (response) => {
        answer = response;
        resolve(response);
      });
      // Whoever reads the answer's body sees the timeout, not the "aborted" of a destroyed request.
      const stop = (error: Error) => {
        answer?.destroy(error);
        req.destroy(error);
      };
      // The whole request, its answer's body included (a body that trickles never goes idle).
      const whole = setTimeout(() => stop(timeoutError(what, t.requestMs)), t.requestMs);
      whole.unref();
      req.once('close', () => clearTimeout(whole));
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        const connect = setTimeout(() => stop(timeoutError(`the connection for ${what}`, t.connectMs)), t.connectMs);
        socket.once('connect', () => clearTimeout(connect));
        req.once('close', () => clearTimeout(connect));
      });
      req.setTimeout(t.idleMs, () => stop(timeoutError(`${what} without data`, t.idleMs)));
      req.on('error', reject);
      req.end(out.body);
    });
  }
}

/** `value`, with the answer's body (none is expected) drained. */
function drained<T>(response: IncomingMessage, value: T): T {
  response.resume();
  return value;
}

/** An answer's body as text; undefined past `limit` bytes. */
async function readText(response: IncomingMessage, limit: number): Promise<string | undefined> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const part of response as AsyncIterable<Buffer>) {
    bytes += part.length;
    if (bytes > limit) {
      response.destroy();
      return undefined;
    }
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** A failing answer as the SDK reports one: its code as the name, its HTTP status. */
async function answerError(response: IncomingMessage): Promise<Error> {
  const text = (await readText(response, 64 * 1024).catch(() => '')) ?? '';
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]{0,500})<\/Message>/.exec(text)?.[1];
  return Object.assign(new Error(message || `HTTP ${response.statusCode}`), {
    name: code ?? `Http${response.statusCode}`,
    $metadata: { httpStatusCode: response.statusCode },
  });
}

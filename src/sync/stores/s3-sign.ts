// AWS Signature Version 4 for the hand-signed S3 requests (s3-direct.ts), and the encodings S3's
// paths and queries carry. Checked against AWS's published examples and the SDK's own signer
// (test/sync-s3-direct.test.ts).
import { createHash, createHmac } from 'node:crypto';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** RFC 3986 encoding, as SigV4 wants it: encodeURIComponent plus the five it leaves. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A key as S3 paths carry it: each segment URI-encoded (as the SDK does), slashes kept. */
export function encodeKey(key: string): string {
  return key.split('/').map(uriEncode).join('/');
}

/** A query in SigV4's canonical form (names sorted, names and values encoded); also what is sent. */
export function canonicalQuery(params: Readonly<Record<string, string>>): string {
  return Object.entries(params)
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

export function amzDateOf(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

const keyCache = new Map<string, Buffer>();

/** AWS Signature Version 4 of a request; `headers` in lower case, all signed; `query` canonical. */
export function signV4(input: {
  method: string;
  path: string;
  query?: string;
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
    input.query ?? '',
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

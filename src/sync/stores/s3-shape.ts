// Where the hand-signed requests go and with which credentials. The shape of a request (scheme,
// host, port, the path in front of the key, signing region and service) is known from the
// settings alone for an S3-compatible endpoint addressed path-style (endpoint/bucket/key, what
// MinIO, Ceph, s3rver and moto take); otherwise it is learned from a GetObject the SDK itself sent
// and signed (AWS's virtual-hosted names, FIPS and dual-stack endpoints and the rest of its
// endpoint rules stay the SDK's). The credentials are the environment's static keys when the SDK
// would take those (AWS_PROFILE unset); any other source is the SDK's provider chain.
import type { Config } from '../../config/schema.js';
import type { Credentials } from './s3-sign.js';
import { encodeKey } from './s3-sign.js';

/** What the requests look like. */
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

/** The signing region: sync.s3.region, AWS_REGION, AWS_DEFAULT_REGION, then us-east-1 (as the client's). */
export function regionFrom(settings: Config['sync']['s3'], env: NodeJS.ProcessEnv = process.env): string {
  return settings.region || env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || 'us-east-1';
}

/** A bucket name that sits in a path as it is (S3's rules for new buckets, dots included). */
const PLAIN_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** The shape for a path-style endpoint, or undefined: then it is learned from the SDK. */
export function shapeFromSettings(
  settings: Config['sync']['s3'],
  bucket: string,
  env: NodeJS.ProcessEnv = process.env,
): GetShape | undefined {
  if (!settings.endpoint || !settings.force_path_style || !PLAIN_BUCKET.test(bucket)) return undefined;
  let url: URL;
  try {
    url = new URL(settings.endpoint);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password) return undefined;
  return {
    protocol: url.protocol,
    hostname: unbracketed(url.hostname),
    ...(url.port ? { port: Number(url.port) } : {}),
    host: url.host,
    base: `${url.pathname.replace(/\/+$/, '')}/${bucket}/`,
    region: regionFrom(settings, env),
    service: 's3',
  };
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
    // An IPv6 literal, as Node's http.request wants it: without its brackets.
    hostname: unbracketed(request.hostname),
    ...(request.port ? { port: request.port } : {}),
    host: headers['host'],
    base: path.slice(0, path.length - encoded.length),
    region: auth[1]!,
    service: auth[2]!,
  };
}

function unbracketed(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1');
}

/** The environment's static keys, when the SDK's provider chain would take them first. */
export function envCredentials(env: NodeJS.ProcessEnv = process.env): Credentials | undefined {
  const accessKeyId = env['AWS_ACCESS_KEY_ID'];
  const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
  // With AWS_PROFILE set the SDK skips the environment's keys for the profile's.
  if (!accessKeyId || !secretAccessKey || env['AWS_PROFILE']) return undefined;
  const sessionToken = env['AWS_SESSION_TOKEN'];
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

// Request and response basics of the API: JSON errors with a code and the field at fault, bodies
// read under a size limit, and validation of JSON fields and path ids at the edge.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The request's URL, refusing dot segments: URL parsing would resolve `/conversations/../events`
 * to `/events`, answering a path the client did not ask for (issue 37).
 */
export function requestUrl(raw: string | undefined): URL {
  const path = (raw ?? '/').split('?')[0]!;
  if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(path))
    throw new HttpError(400, 'invalid_path', 'the path has a "." or ".." segment: send it as it is meant, without them');
  return new URL(raw ?? '/', 'http://atlas.invalid');
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** Extra fields kept out of error bodies: CLI hints and internal names are for the server's log. */
const PRIVATE_FIELDS = new Set(['hint', 'retryAfter', 'details']);

/** Seconds a 429 or 503 asks the client to wait (details.retryAfter, or the older retry_after_s). */
export function retryAfterOf(error: HttpError): number | undefined {
  const details = error.extra['details'] as { retryAfter?: unknown } | undefined;
  const raw = error.extra['retryAfter'] ?? details?.retryAfter ?? error.extra['retry_after_s'];
  return typeof raw === 'number' && Number.isFinite(raw) && raw >= 0 ? Math.max(1, Math.ceil(raw)) : undefined;
}

/**
 * The error body: a stable code, a message and the request id. `redact` takes out what is internal
 * (store endpoint, server paths); CLI hints never leave the server.
 */
export function sendError(res: ServerResponse, error: HttpError, requestId: string, redact: (text: string) => string = (t) => t): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> =
    error.status === 405 && typeof error.extra['allow'] === 'string' ? { allow: error.extra['allow'] } : {};
  if (error.status === 401) headers['www-authenticate'] = 'Bearer realm="atlas"';
  // The rest of a body that was refused or too slow is not read: the connection ends with the answer.
  if (error.status === 408 || error.status === 413) headers['connection'] = 'close';
  const retryAfter = retryAfterOf(error);
  if (retryAfter !== undefined && (error.status === 429 || error.status === 503)) headers['retry-after'] = String(retryAfter);
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(error.extra)) {
    if (PRIVATE_FIELDS.has(k) || k === 'retry_after_s') continue;
    extra[k] = typeof v === 'string' ? redact(v) : v;
  }
  if (retryAfter !== undefined) extra['retry_after_s'] = retryAfter;
  sendJson(res, error.status, { error: { ...extra, code: error.code, message: redact(error.message), request_id: requestId } }, headers);
}

const bodyTimeouts = new WeakMap<IncomingMessage, number>();

/** How long a route may wait for this request's body once it starts reading it (server.body_timeout). */
export function setBodyTimeout(req: IncomingMessage, ms: number): void {
  bodyTimeouts.set(req, ms);
}

/** The body as text, refusing more than `limit` bytes (413) without reading the rest. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(
      new HttpError(413, 'body_too_large', `the request body is ${declared} bytes; the limit is ${limit} (server.max_body)`),
    );
  }
  if (req.readableEnded) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const ms = bodyTimeouts.get(req) ?? 0;
    // A client sending its body a byte at a time holds a socket and a handler: it gets a deadline.
    const timer =
      ms > 0
        ? setTimeout(() => {
            req.removeAllListeners('data');
            reject(new HttpError(408, 'body_timeout', `the request body did not arrive within ${ms} ms`));
          }, ms)
        : undefined;
    const done = () => timer && clearTimeout(timer);
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done();
        req.removeAllListeners('data');
        req.resume();
        reject(new HttpError(413, 'body_too_large', `the request body exceeds ${limit} bytes (server.max_body)`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      done();
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (error) => {
      done();
      reject(error);
    });
  });
}

export type JsonObject = Record<string, unknown>;

/** A JSON object body; an empty body is `{}`. */
export async function readJsonObject(req: IncomingMessage, limit: number): Promise<JsonObject> {
  const type = req.headers['content-type'] ?? '';
  const text = await readBody(req, limit);
  if (text.trim().length === 0) return {};
  if (type && !/^application\/json\b/i.test(type)) {
    throw new HttpError(415, 'unsupported_media_type', `send the body as application/json (got ${type})`);
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    throw new HttpError(400, 'invalid_json', `the body nests arrays or objects more than ${MAX_JSON_DEPTH} deep`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  return data as JsonObject;
}

function fieldError(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_field', `${field}: ${message}`, { field });
}

/** A NUL cannot reach a process's arguments or environment (the turn failed with Node's own message). */
function noNul(field: string, v: string): void {
  if (v.includes('\0')) throw fieldError(field, 'must not contain a NUL character (\\u0000)');
}

export function requiredString(body: JsonObject, field: string, maxLength: number): string {
  const v = body[field];
  if (v === undefined || v === null) throw fieldError(field, 'is required');
  if (typeof v !== 'string') throw fieldError(field, `must be a string, got ${Array.isArray(v) ? 'array' : typeof v}`);
  if (v.trim().length === 0) throw fieldError(field, 'must not be empty');
  if (v.length > maxLength) throw fieldError(field, `must be at most ${maxLength} characters`);
  noNul(field, v);
  return v;
}

export function optionalString(body: JsonObject, field: string, maxLength: number, pattern?: RegExp): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw fieldError(field, `must be a string, got ${typeof v}`);
  if (v.length > maxLength) throw fieldError(field, `must be at most ${maxLength} characters`);
  if (pattern && !pattern.test(v)) throw fieldError(field, `"${v.slice(0, 80)}" is not allowed (expected ${pattern.source})`);
  noNul(field, v);
  return v;
}

export function optionalEnum<T extends string>(body: JsonObject, field: string, values: readonly T[]): T | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !values.includes(v as T)) throw fieldError(field, `must be one of ${values.join(', ')}`);
  return v as T;
}

export function optionalBoolean(body: JsonObject, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw fieldError(field, 'must be true or false');
  return v;
}

/**
 * Ids in paths (conversations, sandboxes) are used as folder names: letters, digits, "-", "_",
 * starting with a letter or digit, so ".." or "/" can never reach the file system.
 */
export const PATH_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;

export function pathId(value: string, name: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    decoded = value;
  }
  if (!PATH_ID.test(decoded)) {
    throw new HttpError(
      400,
      'invalid_id',
      `${name} "${decoded.slice(0, 80)}" is not a valid id (letters, digits, "-" and "_", at most 80)`,
      { field: name },
    );
  }
  return decoded;
}

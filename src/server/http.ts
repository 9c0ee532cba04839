// Request and response basics of the API: JSON errors with a code and the field at fault, bodies
// read under a size limit, and validation of JSON fields and path ids at the edge.
import type { IncomingMessage, ServerResponse } from 'node:http';

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

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

export function sendError(res: ServerResponse, error: HttpError, requestId: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = error.status === 405 && typeof error.extra['allow'] === 'string' ? { allow: error.extra['allow'] } : {};
  if (error.status === 401) headers['www-authenticate'] = 'Bearer realm="atlas"';
  sendJson(res, error.status, { error: { code: error.code, message: error.message, request_id: requestId, ...error.extra } }, headers);
}

/** The body as text, refusing more than `limit` bytes (413) without reading the rest. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(new HttpError(413, 'body_too_large', `the request body is ${declared} bytes; the limit is ${limit} (server.max_body)`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new HttpError(413, 'body_too_large', `the request body exceeds ${limit} bytes (server.max_body)`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
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
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new HttpError(400, 'invalid_body', 'the body must be a JSON object');
  return data as JsonObject;
}

function fieldError(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_field', `${field}: ${message}`, { field });
}

export function requiredString(body: JsonObject, field: string, maxLength: number): string {
  const v = body[field];
  if (v === undefined || v === null) throw fieldError(field, 'is required');
  if (typeof v !== 'string') throw fieldError(field, `must be a string, got ${Array.isArray(v) ? 'array' : typeof v}`);
  if (v.trim().length === 0) throw fieldError(field, 'must not be empty');
  if (v.length > maxLength) throw fieldError(field, `must be at most ${maxLength} characters`);
  return v;
}

export function optionalString(body: JsonObject, field: string, maxLength: number, pattern?: RegExp): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw fieldError(field, `must be a string, got ${typeof v}`);
  if (v.length > maxLength) throw fieldError(field, `must be at most ${maxLength} characters`);
  if (pattern && !pattern.test(v)) throw fieldError(field, `"${v.slice(0, 80)}" is not allowed (expected ${pattern.source})`);
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
    throw new HttpError(400, 'invalid_id', `${name} "${decoded.slice(0, 80)}" is not a valid id (letters, digits, "-" and "_", at most 80)`, { field: name });
  }
  return decoded;
}

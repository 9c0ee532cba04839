// CORS for the origins in server.cors_origins only (exact match): other origins get no CORS
// headers at all, so a browser keeps their pages from reading the API. Preflights answer 204.
import type { IncomingMessage, ServerResponse } from 'node:http';

const ALLOWED_HEADERS = 'authorization, content-type, last-event-id, x-request-id';
const EXPOSED_HEADERS = 'retry-after, x-request-id';

/** Adds CORS headers when the request's Origin is allowed; true when it was a preflight (answered). */
export function applyCors(req: IncomingMessage, res: ServerResponse, origins: readonly string[]): boolean {
  const origin = req.headers['origin'];
  const allowed = typeof origin === 'string' && origins.includes(origin);
  if (allowed) {
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
  }
  if (origins.length > 0) res.setHeader('vary', 'Origin');
  const preflight = req.method === 'OPTIONS' && typeof req.headers['access-control-request-method'] === 'string';
  if (!preflight) return false;
  if (allowed) {
    res.setHeader('access-control-allow-methods', 'GET, POST, DELETE');
    res.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
    res.setHeader('access-control-max-age', '600');
  }
  res.writeHead(allowed ? 204 : 403, { 'content-length': '0' });
  res.end();
  return true;
}

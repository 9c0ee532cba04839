// What a route's handler gets (the request, its account and path parameters) and what the routes
// of an event log share: Last-Event-ID, and a page of JSON instead of a stream when asked for JSON.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, sendJson } from '../http/http.js';
import type { PageRequest } from '../http/pagination.js';
import { pageRequest } from '../http/pagination.js';
import type { EventLog } from '../state/event-log.js';

export interface RequestInfo {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  account: string;
  params: Record<string, string>;
  requestId: string;
  /** Marks the moment the response started (an SSE stream's headers): the log's ttfb_ms. */
  started: () => void;
}

export type Handler = (r: RequestInfo) => Promise<void>;

export function lastEventId(r: RequestInfo): number {
  const raw = r.req.headers['last-event-id'] ?? r.url.searchParams.get('last_event_id') ?? '0';
  const text = Array.isArray(raw) ? raw[0]! : raw;
  if (!/^\d{1,15}$/.test(text))
    throw new HttpError(400, 'invalid_field', 'Last-Event-ID: must be a whole number', { field: 'Last-Event-ID' });
  return Number(text);
}

/** An events route answers a page of JSON instead of a stream when asked for JSON. */
export function wantsJson(r: RequestInfo): boolean {
  const accept = r.req.headers['accept'] ?? '';
  return /application\/json/i.test(accept) && !/text\/event-stream/i.test(accept);
}

/** Events after `after` (Last-Event-ID, last_event_id or cursor), at most `limit`; next_cursor is the last id. */
export async function eventPage(r: RequestInfo, log: EventLog, after: number): Promise<void> {
  const cursor = r.url.searchParams.get('cursor');
  if (cursor !== null && !/^\d{1,15}$/.test(cursor))
    throw new HttpError(400, 'invalid_field', 'cursor: pass next_cursor unchanged (an event id)', { field: 'cursor' });
  const withoutCursor = new URL(r.url);
  withoutCursor.searchParams.delete('cursor');
  const request: PageRequest = pageRequest(withoutCursor, 1000);
  const events = await log.since(cursor !== null ? Math.max(after, Number(cursor)) : after, request.limit + 1);
  const items = events.slice(0, request.limit);
  const more = events.length > items.length;
  sendJson(r.res, 200, { events: items, next_cursor: more ? String(items[items.length - 1]!.id) : null });
}

// Pages of a list: `limit` (1..1000, default 100) and an opaque `cursor` naming the last item a
// page ended on, so a page never repeats or skips an item when new ones arrive at the top.
// Filters by state and time (`since`, `until` on the item's update time) come first.
import { HttpError } from './http.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface PageRequest {
  limit: number;
  /** The sort key of the item the previous page ended on. */
  after: string[] | undefined;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

function invalid(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_field', `${field}: ${message}`, { field });
}

export function pageRequest(url: URL, defaultLimit = DEFAULT_LIMIT): PageRequest {
  const rawLimit = url.searchParams.get('limit');
  let limit = defaultLimit;
  if (rawLimit !== null) {
    if (!/^\d{1,7}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > MAX_LIMIT)
      throw invalid('limit', `must be a whole number from 1 to ${MAX_LIMIT}`);
    limit = Number(rawLimit);
  }
  const rawCursor = url.searchParams.get('cursor');
  let after: string[] | undefined;
  if (rawCursor !== null && rawCursor !== '') {
    try {
      const data: unknown = JSON.parse(Buffer.from(rawCursor, 'base64url').toString('utf8'));
      if (!Array.isArray(data) || !data.every((v) => typeof v === 'string')) throw new Error('not a key');
      after = data as string[];
    } catch {
      throw invalid('cursor', 'is not a cursor this server gave out (pass next_cursor unchanged)');
    }
  }
  return { limit, after };
}

export function encodeCursor(key: string[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

function compareKeys(a: string[], b: string[], order: ('asc' | 'desc')[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? '';
    const y = b[i] ?? '';
    if (x !== y) return (x < y ? -1 : 1) * (order[i] === 'desc' ? -1 : 1);
  }
  return 0;
}

/**
 * The page of `items` after the cursor. `key` gives each item's sort key and `order` its direction
 * per part; items are sorted here, so the caller's order does not matter.
 */
export function paginate<T>(items: T[], request: PageRequest, key: (item: T) => string[], order: ('asc' | 'desc')[]): Page<T> {
  const keyed = items.map((item) => ({ item, k: key(item) })).sort((a, b) => compareKeys(a.k, b.k, order));
  const start = request.after ? keyed.findIndex((e) => compareKeys(e.k, request.after!, order) > 0) : 0;
  const from = start < 0 ? keyed.length : start;
  const slice = keyed.slice(from, from + request.limit);
  const more = from + request.limit < keyed.length;
  return { items: slice.map((e) => e.item), next_cursor: more && slice.length > 0 ? encodeCursor(slice[slice.length - 1]!.k) : null };
}

/** A fixed-width number, so keys made of numbers sort as text. */
export function numberKey(n: number): string {
  return String(n).padStart(16, '0');
}

export interface ItemFilter {
  state: string | undefined;
  since: number | undefined;
  until: number | undefined;
}

function time(url: URL, field: string): number | undefined {
  const raw = url.searchParams.get(field);
  if (raw === null || raw === '') return undefined;
  const t = Date.parse(raw);
  if (!Number.isFinite(t)) throw invalid(field, 'must be a date-time such as 2026-01-31T12:00:00Z');
  return t;
}

export function itemFilter(url: URL, states: readonly string[]): ItemFilter {
  const state = url.searchParams.get('state') ?? undefined;
  if (state !== undefined && !states.includes(state)) throw invalid('state', `must be one of ${states.join(', ')}`);
  return { state, since: time(url, 'since'), until: time(url, 'until') };
}

export function matches(filter: ItemFilter, state: string, updatedAt: string): boolean {
  if (filter.state !== undefined && state !== filter.state) return false;
  const t = Date.parse(updatedAt);
  if (filter.since !== undefined && !(t >= filter.since)) return false;
  if (filter.until !== undefined && !(t < filter.until)) return false;
  return true;
}

// The server's small parts on their own: the rate limiter's buckets, readiness of an S3 store that
// does not answer, pages and cursors, and the OpenAPI checker refusing what the document does not
// describe.
import { describe, expect, it } from 'vitest';
import { checkState, checkStore, ReadinessProbe } from '../src/server/http/health.js';
import { HttpError, retryAfterOf } from '../src/server/http/http.js';
import { encodeCursor, paginate } from '../src/server/http/pagination.js';
import { RateLimiter } from '../src/server/http/rate-limit.js';
import { tempDir } from './helpers/core-fixtures.js';
import { openApiValidator } from './helpers/openapi-check.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';

describe('rate limiter', () => {
  it('allows a burst of twice the rate, refills over time, says when to retry, and forgets idle accounts', () => {
    let now = 0;
    const limiter = new RateLimiter(5, () => now);
    for (let i = 0; i < 10; i++) limiter.take('a');
    let refused: HttpError | undefined;
    try {
      limiter.take('a');
    } catch (error) {
      refused = error as HttpError;
    }
    expect(refused?.status).toBe(429);
    expect(retryAfterOf(refused!)).toBe(1);
    now += 200;
    limiter.take('a');
    new RateLimiter(0).take('a');
    const many = new RateLimiter(1, () => now);
    for (let i = 0; i < 10_002; i++) many.take(`acct-${i}`);
    now += 10_000;
    many.take('last');
    expect(() => many.take('last')).not.toThrow();
  });

  it('Retry-After comes from details.retryAfter, retryAfter or retry_after_s, rounded up to whole seconds', () => {
    expect(retryAfterOf(new HttpError(429, 'x', 'm', { details: { retryAfter: 2.2 } }))).toBe(3);
    expect(retryAfterOf(new HttpError(429, 'x', 'm', { retryAfter: 0.1 }))).toBe(1);
    expect(retryAfterOf(new HttpError(429, 'x', 'm', { retry_after_s: 4 }))).toBe(4);
    expect(retryAfterOf(new HttpError(429, 'x', 'm'))).toBeUndefined();
  });
});

describe('readiness checks', () => {
  it('an S3 store that does not answer, a bad address, and a state folder that cannot be written are each down', async () => {
    const home = tempDir();
    const s3 = await checkStore(
      agentConfig((c) => {
        c.sync.store = 's3://bucket/prefix';
        c.sync.s3.endpoint = 'http://127.0.0.1:9';
        c.sync.s3.force_path_style = true;
      }),
      home,
    );
    expect(s3.ok).toBe(false);
    expect(s3.detail).not.toContain('127.0.0.1');
    expect(
      (
        await checkStore(
          agentConfig((c) => (c.sync.store = 's3://')),
          home,
        )
      ).ok,
    ).toBe(false);
    expect((await checkStore(agentConfig(), home)).ok).toBe(true);
    expect((await checkState('/proc/1/no/such')).ok).toBe(false);
    const probe = new ReadinessProbe({ a: async () => ({ ok: true, detail: 'a' }), b: async () => Promise.reject(new Error('b broke')) });
    expect(await probe.read('ready')).toMatchObject({ status: 'not_ready', checks: { b: { ok: false, detail: 'b broke' } } });
    expect((await probe.read('starting')).status).toBe('starting');
  }, 20_000);
});

describe('pages', () => {
  it('a cursor past the end gives an empty last page; keys sort in each direction', () => {
    const items = ['b', 'a', 'c'].map((id) => ({ id }));
    expect(paginate(items, { limit: 2, after: undefined }, (i) => [i.id], ['asc'])).toEqual({
      items: [{ id: 'a' }, { id: 'b' }],
      next_cursor: encodeCursor(['b']),
    });
    expect(paginate(items, { limit: 2, after: ['b'] }, (i) => [i.id], ['asc'])).toEqual({ items: [{ id: 'c' }], next_cursor: null });
    expect(paginate(items, { limit: 2, after: ['z'] }, (i) => [i.id], ['asc'])).toEqual({ items: [], next_cursor: null });
    expect(paginate(items, { limit: 5, after: undefined }, (i) => [i.id], ['desc']).items.map((i) => i.id)).toEqual(['c', 'b', 'a']);
  });
});

describe('the OpenAPI checker', () => {
  it('refuses undocumented methods, statuses, content types and bodies', () => {
    const check = openApiValidator();
    expect(check('PUT', '/conversations', 200, 'application/json', {})).toEqual([expect.stringContaining('not documented')]);
    expect(check('GET', '/conversations', 201, 'application/json', {})[0]).toContain('status 201');
    expect(check('GET', '/conversations', 200, 'text/html', '')[0]).toContain('content type');
    expect(check('GET', '/conversations', 200, 'application/json', { conversations: 'x' })[0]).toContain('must be array');
    expect(check('GET', '/nowhere', 404, 'application/json', { error: { code: 'not_found', message: 'm', request_id: 'r' } })).toEqual([]);
    expect(check('GET', '/nowhere', 404, 'application/json', { error: { code: 'Bad Code' } })).not.toEqual([]);
  });
});

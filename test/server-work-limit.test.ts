// Running work per account (issue 19, defect 2): a turn holds its slot until its agent stopped,
// not while its client listens; requests past the limit wait in a bounded queue, then get 429 with
// Retry-After.
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import type { HttpError } from '../src/server/http/http.js';
import { WorkLimiter } from '../src/server/http/work-limit.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();

describe('the work limiter', () => {
  it('queues past the limit, hands a released slot to the first waiter, refuses a full queue', async () => {
    const limiter = new WorkLimiter({ maxRunning: 2, maxQueued: 1, queueTimeoutMs: 5000 });
    const a = await limiter.acquire('alice');
    const b = await limiter.acquire('alice');
    expect(limiter.runningOf('alice')).toBe(2);
    const waiting = limiter.acquire('alice');
    expect(limiter.queued()).toBe(1);
    const full = await limiter.acquire('alice').catch((e: HttpError) => e);
    expect(full).toMatchObject({ status: 429, code: 'too_many_running' });
    expect((full as HttpError).extra['retry_after_s']).toBe(5);
    // Another account is not held up.
    (await limiter.acquire('bob'))();
    a();
    a(); // a second release changes nothing
    const c = await waiting;
    expect(limiter.runningOf('alice')).toBe(2);
    expect(limiter.queued()).toBe(0);
    b();
    c();
    expect(limiter.runningOf('alice')).toBe(0);
  });

  it('a waiter times out with 429, and leaves the queue when its client goes away', async () => {
    const limiter = new WorkLimiter({ maxRunning: 1, maxQueued: 5, queueTimeoutMs: 100 });
    const held = await limiter.acquire('alice');
    await expect(limiter.acquire('alice')).rejects.toMatchObject({ status: 429, message: expect.stringContaining('server.queue_timeout') });
    const gone = new AbortController();
    const waiting = limiter.acquire('alice', gone.signal);
    expect(limiter.queued()).toBe(1);
    gone.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'client_gone' });
    expect(limiter.queued()).toBe(0);
    held();
    expect(limiter.runningOf('alice')).toBe(0);
  });
});

describe('running turns per account over HTTP', () => {
  it('clients that start turns and hang up keep their slots until the agents stop; the next waits or gets 429', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(
      home,
      agentConfig((c) => Object.assign(c.server, { max_running_per_account: 2, max_queued_per_account: 0, requests_per_second: 0 })),
    );
    // Two clients start long turns and hang up as soon as their streams open.
    for (const id of ['c1', 'c2']) {
      const gone = new AbortController();
      const res = await fetch(`${url}/conversations/${id}/sandbox/${id}`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'sleep:1500 work' }),
        signal: gone.signal,
      });
      expect(res.status).toBe(200);
      gone.abort();
    }
    const refused = await fetch(`${url}/conversations/c3/sandbox/c3`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'hi' }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_running');
    // Once the agents have stopped, there is room again.
    const ended = async (id: string) =>
      ((await (await fetch(`${url}/conversations/${id}`, { headers: auth(token) })).json()) as { conversation: { status: string } })
        .conversation.status !== 'running';
    await waitUntil(async () => ((await ended('c1')) && (await ended('c2')) ? true : undefined), 15_000, 'the agents to stop');
    const ok = await fetch(`${url}/conversations/c3/sandbox/c3`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'hi' }),
    });
    expect(ok.status).toBe(200);
    await ok.text();
  }, 30_000);

  it('a queued request starts when a slot frees', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(
      home,
      agentConfig((c) =>
        Object.assign(c.server, { max_running_per_account: 1, max_queued_per_account: 2, queue_timeout: 20_000, requests_per_second: 0 }),
      ),
    );
    const first = fetch(`${url}/conversations/q1/sandbox/q1`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:500 one' }),
    });
    const second = fetch(`${url}/conversations/q2/sandbox/q2`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'two' }),
    });
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await b.text()).toContain('event: usage');
    await a.text();
  }, 30_000);

  it('with the defaults the queue (16) fills before the stream limit (16) refuses, and atlas_running counts only turns past the queue', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(
      home,
      agentConfig((c) => (c.server.requests_per_second = 0)),
    );
    const metric = async (name: string) =>
      Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? NaN);
    await waitUntil(async () => (Number.isFinite(await metric('atlas_running{kind="streams"}')) ? true : undefined), 10_000, 'metrics');
    // 8 running (the default), 16 waiting in the queue: their streams do not count yet.
    const turns = Array.from({ length: 24 }, (_, i) =>
      fetch(`${url}/conversations/w${i}/sandbox/w${i}`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: `sleep:1500 turn ${i}` }),
      }),
    );
    await waitUntil(async () => ((await metric('atlas_queued{kind="requests"}')) === 16 ? true : undefined), 20_000, 'the queue to fill');
    expect(await metric('atlas_running{kind="conversations"}')).toBe(8);
    const refused = await fetch(`${url}/conversations/w24/sandbox/w24`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'one too many' }),
    });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: 'too_many_running' } });
    const statuses = await Promise.all(
      turns.map(async (t) => {
        const r = await t;
        await r.text();
        return r.status;
      }),
    );
    expect(statuses).toEqual(Array(24).fill(200));
  }, 90_000);
});

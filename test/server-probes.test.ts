// Issue 37: probes that tell the truth. /ready fails while the state's PostgreSQL is stopped
// (pg_ctl) and comes back with it; requests meanwhile get 503 state_unavailable. A DynamoDB that
// accepts connections and never answers (a TCP server on 127.0.0.1 put in front of moto, switched
// to hang) fails /ready and makes GET …/messages answer 503 state_unavailable within its
// deadlines, instead of hanging; and no AWS SDK warning at start.

import type { AddressInfo, Server, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { isStateUnavailable, StateUnavailableError } from '../src/server/state/unavailable.js';
import { tempDir } from './helpers/core-fixtures.js';
import type { TestMoto } from './helpers/moto.js';
import { MOTO_ENV, motoMissing, startMotoServer } from './helpers/moto.js';
import { checkResponses } from './helpers/openapi-check.js';
import { postgresSkipReason, usePostgres } from './helpers/postgres.js';
import { auth, prompt, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();

async function ready(url: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${url}/ready`);
  return { status: r.status, body: await r.json() };
}

describe.skipIf(postgresSkipReason !== undefined)(
  `/ready and a stopped PostgreSQL${postgresSkipReason ? ` (skipped: ${postgresSkipReason})` : ''}`,
  () => {
    const postgres = usePostgres();

    it('says not ready (database unreachable) while PostgreSQL is stopped, requests get 503 state_unavailable, and ready again once it is back', async () => {
      const home = tempDir();
      const pg = postgres();
      const databaseUrl = await pg.createDatabase('probes');
      const { token } = await createToken(home, 'alice', new Date(), { database: databaseUrl });
      const { url } = await serve(
        home,
        agentConfig((c) => (c.server.database = databaseUrl)),
      );
      await waitUntil(async () => ((await ready(url)).status === 200 ? true : undefined), 30_000, 'ready');
      expect((await ready(url)).body.checks.database).toEqual({ ok: true, detail: 'database answers' });
      pg.kill();
      const down = await waitUntil(
        async () => {
          const r = await ready(url);
          return r.status === 503 ? r : undefined;
        },
        30_000,
        'not ready',
      );
      expect(down.body).toMatchObject({ status: 'not_ready', checks: { database: { ok: false } } });
      expect(JSON.stringify(down.body)).not.toContain(String(pg.port));
      const r = await fetch(`${url}/conversations`, { headers: auth(token) });
      expect(r.status).toBe(503);
      expect(await r.json()).toMatchObject({ error: { code: 'state_unavailable' } });
      pg.start();
      await waitUntil(async () => ((await ready(url)).status === 200 ? true : undefined), 30_000, 'ready again');
    }, 120_000);
  },
);

/** A TCP front for moto that can be switched to accept connections and never answer. */
async function hangingFront(target: string): Promise<{ url: string; hang(): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  let hanging = false;
  const held: Socket[] = [];
  const server: Server = createServer((socket) => {
    held.push(socket);
    socket.on('error', () => undefined);
    if (hanging) return;
    const upstream = connect(Number(port), hostname);
    upstream.on('error', () => socket.destroy());
    held.push(upstream);
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hang: () => {
      hanging = true;
      // Connections kept alive by the SDK hang too: their answers stop.
      for (const s of held.splice(0)) s.unpipe?.(), s.pause();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of held) s.destroy();
        server.close(() => r());
      }),
  };
}

const motoSkipReason = motoMissing();

describe.skipIf(motoSkipReason !== undefined)(`a DynamoDB that hangs${motoSkipReason ? ` (skipped: ${motoSkipReason})` : ''}`, () => {
  let moto: TestMoto;
  beforeAll(async () => {
    Object.assign(process.env, MOTO_ENV);
    moto = await startMotoServer();
  }, 120_000);
  afterAll(async () => moto?.stop());

  it('fails /ready (message store unreachable) and answers GET …/messages with 503 state_unavailable instead of hanging', async () => {
    const front = await hangingFront(moto.url);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const home = tempDir();
      const { token } = await createToken(home, 'alice');
      const { url } = await serve(
        home,
        // Each attempt's deadline at 1 s (5 s by default): the 503 and the failed /ready come sooner.
        agentConfig((c) => (c.server.messages = `dynamodb://atlas-hang?endpoint=${front.url}&timeout=1s`)),
      );
      const turn = await prompt(url, token, 'c1', { prompt: 'hello' });
      expect(turn.status).toBe(200);
      expect((await fetch(`${url}/conversations/c1/messages`, { headers: auth(token) })).status).toBe(200);
      front.hang();
      const r = await fetch(`${url}/conversations/c1/messages`, { headers: auth(token) });
      expect(r.status).toBe(503);
      expect(await r.json()).toMatchObject({ error: { code: 'state_unavailable' } });
      expect(r.headers.get('retry-after')).toBe('1');
      const down = await waitUntil(
        async () => {
          const x = await ready(url);
          return x.status === 503 ? x : undefined;
        },
        60_000,
        'not ready',
      );
      expect(down.body.checks.messages).toEqual({ ok: false, detail: 'message store unreachable' });
      expect(JSON.stringify(down.body)).not.toContain(front.url);
      // No AWS SDK warning at start (it said Node.js 22 would be needed by its releases of 2027).
      expect(warnings.filter((w) => w.includes('AWS SDK'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await front.close();
    }
  }, 120_000);
});

describe('what counts as the state being unavailable', () => {
  it('network codes, PostgreSQL connection and shutdown classes, pg deadlines, causes; not a plain error', () => {
    expect(isStateUnavailable(new StateUnavailableError('x'))).toBe(true);
    expect(isStateUnavailable(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isStateUnavailable(Object.assign(new Error('x'), { code: '08006' }))).toBe(true);
    expect(isStateUnavailable(Object.assign(new Error('x'), { code: '57P01' }))).toBe(true);
    expect(isStateUnavailable(new Error('Query read timeout'))).toBe(true);
    expect(isStateUnavailable(new Error('wrapped', { cause: new Error('Connection terminated unexpectedly') }))).toBe(true);
    expect(isStateUnavailable(new Error('syntax error'))).toBe(false);
    expect(isStateUnavailable(Object.assign(new Error('x'), { code: '23505' }))).toBe(false);
    expect(isStateUnavailable(undefined)).toBe(false);
  });
});

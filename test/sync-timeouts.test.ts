// Every S3 request has a timeout (issue 36): real servers on 127.0.0.1 that accept a connection
// and then say nothing, that send an answer's head and part of its body and then stall, and that
// trickle a byte at a time (never idle). A push or pull fails, naming a network timeout, once its
// attempts (sync.retries + 1) are spent; each attempt is one more connection the server saw. Before,
// the SDK's client had no timeout: a push waited on a stalled connection until killed. Timeouts are
// set small through ATLAS_SYNC_*_TIMEOUT.
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { makeS3Client } from '../src/sync/stores/s3-client.js';
import { DirectRequests } from '../src/sync/stores/s3-direct.js';
import { DEFAULT_TIMEOUTS, timeoutsFrom } from '../src/sync/stores/s3-timeouts.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { S3RVER_ONLY_ENV, sdkOf } from './helpers/s3rver.js';
import { configWith, depsFor, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const savedEnv = { ...process.env };
beforeAll(() => {
  Object.assign(process.env, S3RVER_ONLY_ENV, {
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  delete process.env['AWS_MAX_ATTEMPTS'];
});
afterAll(() => {
  process.env = savedEnv;
  removeScratch();
});

const open: { server: Server; sockets: Set<Socket> }[] = [];
afterEach(async () => {
  for (const { server, sockets } of open.splice(0)) {
    for (const s of sockets) s.destroy();
    await new Promise((ok) => server.close(ok));
  }
  for (const name of ['ATLAS_SYNC_CONNECT_TIMEOUT', 'ATLAS_SYNC_IDLE_TIMEOUT', 'ATLAS_SYNC_REQUEST_TIMEOUT']) delete process.env[name];
});

/** Listens on 127.0.0.1; counts connections; each handled by `serve` (which may do nothing at all). */
async function listen(server: Server): Promise<{ endpoint: string; connections: () => number }> {
  const sockets = new Set<Socket>();
  let count = 0;
  server.on('connection', (s: Socket) => {
    count++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  open.push({ server, sockets });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => count };
}

const silent = () => listen(createServer(() => undefined));
/** Answers every request with the head of a 100 KB body and 10 bytes of it, then stalls. */
const stallsMidBody = () =>
  listen(
    createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': '100000' });
      res.write('<?xml vers');
    }),
  );
/** Sends a byte every 20 ms for ever: never idle. */
const trickles = () =>
  listen(
    createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': '100000' });
      const timer = setInterval(() => res.write(' '), 20);
      res.once('close', () => clearInterval(timer));
    }),
  );

async function sync(endpoint: string, what: 'push' | 'pull'): Promise<unknown> {
  const base = scratch('atlas-timeouts-');
  writeTree(`${base}/ws`, { a: 'a' });
  const config = configWith({ store: 's3://bucket/p', retries: 1, s3: { endpoint, force_path_style: true } });
  const deps = await depsFor(config, `${base}/home`);
  const target: SyncTarget = { root: `${base}/ws`, tree: 'ws', workspace: 'ws' };
  return (what === 'push' ? syncPush(target, deps) : syncPull(target, deps, {})).then(
    () => new Error('the sync succeeded'),
    (error: unknown) => error,
  );
}

describe('request timeouts', () => {
  const cases = [
    {
      name: 'a push to a server that accepts and says nothing fails on the idle timeout',
      variable: 'ATLAS_SYNC_IDLE_TIMEOUT',
      seconds: '0.2',
      start: silent,
      what: 'push',
      message: /network error .*timed out/,
    },
    {
      name: 'a pull from a server that stalls in the middle of a body fails on the idle timeout',
      variable: 'ATLAS_SYNC_IDLE_TIMEOUT',
      seconds: '0.2',
      start: stallsMidBody,
      what: 'pull',
      message: /network error .*timed out/,
    },
    {
      name: 'a push to a server that trickles a byte at a time is stopped by the whole-request timeout',
      variable: 'ATLAS_SYNC_REQUEST_TIMEOUT',
      seconds: '0.5',
      start: trickles,
      what: 'push',
      message: /timed out/,
    },
  ] as const;
  for (const c of cases) {
    it(`${c.name}, after its two attempts`, async () => {
      process.env[c.variable] = c.seconds;
      const server = await c.start();
      const error = await sync(server.endpoint, c.what);
      expect(error).toBeInstanceOf(AtlasError);
      expect((error as Error).message).toMatch(c.message);
      expect(server.connections()).toBe(2);
    }, 60_000);
  }

  it('the hand-signed path has the same timeouts: a stalled answer fails on them, a trickling body is cut', async () => {
    let requests = 0;
    let mode: 'answer' | 'stall' | 'trickle' = 'answer';
    const server = await listen(
      createHttpServer((_req, res) => {
        requests++;
        if (mode === 'stall') return;
        res.writeHead(200, { 'content-length': mode === 'answer' ? '1' : '100000' });
        if (mode === 'answer') return void res.end('x');
        const timer = setInterval(() => res.write(' '), 20);
        res.once('close', () => clearInterval(timer));
      }),
    );
    const timeouts = { connectMs: 1000, idleMs: 200, requestMs: 500 };
    const client = makeS3Client({ endpoint: server.endpoint, force_path_style: true, region: 'us-east-1' }, 1, timeouts);
    const direct = new DirectRequests(await sdkOf(client), timeouts);
    const got = await client.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'p/state' }));
    expect(await got.Body!.transformToString()).toBe('x'); // the shape is learned
    mode = 'stall';
    await expect(direct.get('p/other')).rejects.toThrow(/GET p\/other without data timed out after 0.2 s/);
    mode = 'trickle';
    const body = await direct.get('p/other');
    const read = async () => {
      for await (const _ of body!) void _;
    };
    await expect(read()).rejects.toThrow();
    // And the SDK's own answer body is cut by the whole-request timeout too.
    const sdk = await client.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'p/more' }));
    await expect(sdk.Body!.transformToString()).rejects.toThrow(/timed out/);
    expect(requests).toBe(4);
  }, 60_000);

  it('reads the timeouts from the environment, in seconds, and refuses what is not a number of seconds', () => {
    expect(timeoutsFrom({})).toEqual(DEFAULT_TIMEOUTS);
    expect(timeoutsFrom({ ATLAS_SYNC_CONNECT_TIMEOUT: '2', ATLAS_SYNC_IDLE_TIMEOUT: '0.25', ATLAS_SYNC_REQUEST_TIMEOUT: ' 90 ' })).toEqual({
      connectMs: 2000,
      idleMs: 250,
      requestMs: 90_000,
    });
    for (const bad of ['0', '-1', 'ten', '1e3'])
      expect(() => timeoutsFrom({ ATLAS_SYNC_IDLE_TIMEOUT: bad })).toThrow(/ATLAS_SYNC_IDLE_TIMEOUT=.* is not a number of seconds/);
  });
});

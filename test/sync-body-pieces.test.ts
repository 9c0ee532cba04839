import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyPieces, noPieces } from '../src/sync/scan/body-pieces.js';

const BODY = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));

/** The pieces a reader is handed, joined. */
async function gather(pieces: (each: (piece: Buffer) => void) => Promise<void>): Promise<Buffer> {
  const got: Buffer[] = [];
  await pieces((piece) => got.push(Buffer.from(piece)));
  return Buffer.concat(got);
}

describe('bodyPieces: a body handed over piece by piece', () => {
  let server: http.Server;
  let port: number;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();

  beforeAll(async () => {
    // A server that answers Range as asked at /range and sends the whole object at /whole.
    server = http.createServer((req, res) => {
      const m = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? '');
      if (req.url === '/range' && m) {
        res.writeHead(206, { 'content-length': Number(m[2]) - Number(m[1]) + 1 });
        res.end(BODY.subarray(Number(m[1]), Number(m[2]) + 1));
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': BODY.length });
        res.write(BODY.subarray(0, 1000), () => res.socket?.destroy());
      } else {
        res.writeHead(200, { 'content-length': BODY.length });
        res.end(BODY);
      }
    });
    server.on('connection', (s) => sockets.add(s));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    agent.destroy();
    server.close();
    server.closeAllConnections();
  });

  // Kept-alive (one socket) for ranges; a connection of its own for the answers dropped midway.
  const get = (path: string, range?: string) =>
    new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port, path, agent: range ? agent : false, headers: range ? { range } : {} }, resolve)
        .on('error', reject),
    );

  it('hands over exactly a ranged answer, and its connection serves the next request', async () => {
    const res = await get('/range', 'bytes=1000-150999');
    expect(await gather(bodyPieces(res, 0, 150_000))).toEqual(BODY.subarray(1000, 151_000));
    const again = await get('/range', 'bytes=0-9');
    expect(await gather(bodyPieces(again, 0, 10))).toEqual(BODY.subarray(0, 10));
    // One socket for both: the first answer was read to its end, not dropped.
    expect(sockets.size).toBe(1);
  });

  it('cuts the range out of a whole object sent instead, and drops the rest', async () => {
    const res = await get('/whole');
    expect(await gather(bodyPieces(res, 5000, 20_000))).toEqual(BODY.subarray(5000, 25_000));
    expect(res.destroyed).toBe(true);
  });

  it('passes a body cut off midway through `broken`, and the reader rejects as it threw', async () => {
    const cut = await get('/cut');
    const marked = await gather(bodyPieces(cut, 0, BODY.length, (e) => Object.assign(e as object, { $cutOff: true }))).catch((e) => e);
    expect(marked).toMatchObject({ $cutOff: true });

    const res = await get('/range', 'bytes=0-99999');
    const failure = new Error('content does not match its checksum');
    const thrown = await bodyPieces(
      res,
      0,
      100_000,
      () => new Error('not this one'),
    )(() => {
      throw failure;
    }).catch((e) => e);
    expect(thrown).toBe(failure);
    expect(res.destroyed).toBe(true);
  });

  it('ends with what came when a body is shorter than the range (the reader names what is missing)', async () => {
    expect(await gather(bodyPieces(Readable.from([Buffer.from('abc')]), 0, 10))).toEqual(Buffer.from('abc'));
    expect(await gather(noPieces)).toEqual(Buffer.alloc(0));
  });

  it('hands each piece over as it arrives, before the next one exists', async () => {
    const body = new PassThrough();
    const seen: string[] = [];
    const done = bodyPieces(body, 2, 6)((piece) => seen.push(piece.toString()));
    body.write('abcd');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['cd']);
    body.write('efgh');
    body.end();
    await done;
    expect(seen).toEqual(['cd', 'efgh']);
  });
});

// Issue 37: admission that protects the others. One client opening 1,030 idle connections (more
// than server.max_connections) from one address: /health still answers from that address, and a
// client with a token from another address is served; the flooding address keeps no more than its
// share. A body nesting 500,000 arrays is refused (400) before it is parsed.

import { request } from 'node:http';
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { PROBE_RESERVE } from '../src/server/http/admission.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../src/server/http/json-depth.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();

const serve = inProcessServers();

/** A raw GET on a fresh connection (from `localAddress`): its status, or the error that ended it. */
function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  localAddress = '127.0.0.1',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, localAddress, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function idleConnection(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('close', () => resolve({ socket, closed }));
    setTimeout(() => reject(new Error('no connect')), 30_000).unref();
  });
}

describe('connection admission', () => {
  it('1,030 idle connections from one address: /health answers there, another client is served, the flood keeps only its share', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { server } = await serve(home, agentConfig());
    const flood: { socket: Socket; closed: Promise<void> }[] = [];
    try {
      for (let i = 0; i < 1030; i += 100)
        flood.push(...(await Promise.all(Array.from({ length: Math.min(100, 1030 - i) }, () => idleConnection(server.port)))));
      // The probe, from the flooding address itself, and a real client from another address.
      const health = await get(server.port, '/health');
      expect(health.status).toBe(200);
      const other = await get(server.port, '/conversations', auth(token), '127.0.0.2');
      expect(other.status).toBe(200);
      // A request other than a probe on a connection let in past the caps: 503, and it closes.
      const refused = await get(server.port, '/conversations', auth(token));
      expect([200, 503]).toContain(refused.status);
      if (refused.status === 503) expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too_many_connections' } });
      // The flood holds its address's share (a quarter of 1,024) and the probes' reserve at most.
      const open = flood.filter((f) => !f.socket.destroyed && f.socket.readyState === 'open');
      expect(open.length).toBeLessThanOrEqual(256 + PROBE_RESERVE);
    } finally {
      for (const f of flood) f.socket.destroy();
    }
  }, 60_000);
});

describe('JSON depth', () => {
  it('refuses a body nesting 500,000 arrays with 400 before parsing it; strings holding brackets are not nesting', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    const deep = `{"prompt":${'['.repeat(500_000)}${']'.repeat(500_000)}}`;
    const r = await fetch(`${url}/conversations/c1/sandbox/s1`, { method: 'POST', headers: auth(token), body: deep });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: { code: 'invalid_json', message: expect.stringContaining(`${MAX_JSON_DEPTH} deep`) } });
    expect(nestsDeeperThan(JSON.stringify({ a: '[[[[[[[[\\"[[[['.repeat(100) }), 3)).toBe(false);
    expect(nestsDeeperThan('[[[[', 3)).toBe(true);
    expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
  });
});

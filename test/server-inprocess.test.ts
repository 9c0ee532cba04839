// The server's parts, in this process (so coverage sees them): a failing OnColdStart removes what
// it created and answers 5xx JSON, failing OnMessage and OnStreamFinish never fail the stream, a
// slow SSE client is dropped while the agent goes on, DELETE keeps or terminates the sandbox,
// health reports an unreachable store; and the event log, router, body and token edges.
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import type { LifecycleBus } from '../src/lifecycle/types.js';
import { createToken, listTokens, readTokens, revokeToken, TokenVerifier, tokensPath } from '../src/server/accounts/tokens.js';
import { LazyState } from '../src/server/cluster/server-state.js';
import { importFileState } from '../src/server/cluster/state-import.js';
import { HttpError, pathId } from '../src/server/http/http.js';
import { Router } from '../src/server/http/router.js';
import type { RunningServer } from '../src/server/server.js';
import { startServer } from '../src/server/server.js';
import { isLoopback, sandboxReadiness } from '../src/server/start-checks.js';
import { EventLog } from '../src/server/state/event-log.js';
import { ATLAS_BIN, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import { auth, getJson, prompt, readSse, STREAM_AGENT, waitUntil } from './helpers/server-fixtures.js';

checkResponses();

const running: RunningServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('test over');
});

function config(change: (c: Config) => void = () => undefined): Config {
  const c = defaultConfig();
  c.ai.agent = 'command';
  c.ai.command = `${process.execPath} ${STREAM_AGENT}`;
  change(c);
  return c;
}

async function serve(home: string, options: { lifecycle?: () => LifecycleBus; config?: Config; host?: string } = {}) {
  const lines: string[] = [];
  const warnings: string[] = [];
  const server = await startServer({
    home,
    config: options.config ?? config(),
    host: options.host ?? '127.0.0.1',
    port: 0,
    local: true,
    recover: false,
    version: 'test',
    atlasCommand: { command: process.execPath, args: [ATLAS_BIN] },
    write: (l) => lines.push(l),
    warn: (w) => warnings.push(w),
    ...(options.lifecycle ? { lifecycle: options.lifecycle } : {}),
  });
  running.push(server);
  return { server, lines, warnings, url: server.url };
}

describe('lifecycle points around a conversation', () => {
  it('a failing OnColdStart hook answers 502 JSON and removes the conversation and its workspace', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, { config: config((c) => (c.lifecycle.on_cold_start = ['echo store unreachable >&2; exit 3'])) });
    const r = await prompt(url, token, 'cold', { prompt: 'hi' });
    expect(r.status).toBe(502);
    expect(r.json.error).toMatchObject({ code: 'cold_start_failed', removed: true });
    expect(r.json.error.message).toContain('store unreachable');
    expect(existsSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'cold'))).toBe(false);
    expect((await getJson(url, token, '/conversations/cold')).status).toBe(404);
  });

  it('a bus whose OnColdStart throws for a resumed sandbox answers 502 and keeps the conversation', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const first = await serve(home);
    expect((await prompt(first.url, token, 'kept', { prompt: 'hi' })).status).toBe(200);
    const failing = (): LifecycleBus => ({
      coldStart: async () => Promise.reject(new Error('restore failed')),
      message: async () => undefined,
      streamFinish: async () => undefined,
      terminate: async () => undefined,
    });
    const second = await serve(home, { lifecycle: failing });
    const r = await prompt(second.url, token, 'kept', { prompt: 'again' });
    expect(r.json.error).toMatchObject({ code: 'cold_start_failed', removed: false });
    expect(existsSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'kept', 'workspace', 'notes.txt'))).toBe(true);
  });

  it('failing OnMessage and OnStreamFinish hooks are logged in lifecycle.log, and the stream still ends with usage', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, {
      config: config((c) => {
        c.lifecycle.on_message = ['exit 1'];
        c.lifecycle.on_stream_finish = ['exit 2'];
      }),
    });
    const r = await prompt(url, token, 'c', { prompt: 'hi' });
    expect(r.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
    const lifecycleLog = readFileSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'c', 'lifecycle.log'), 'utf8');
    expect(lifecycleLog).toContain('on_stream_finish');
    expect(lifecycleLog).toContain('failed');
    expect((await getJson(url, token, '/conversations/c/messages')).json.messages.length).toBeGreaterThan(1);
  });

  it('OnTerminate hooks see the workspace before DELETE removes it', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const seen = join(home, 'seen.txt');
    const { url } = await serve(home, {
      config: config((c) => (c.lifecycle.on_terminate = [`cat "$ATLAS_WORKSPACE/notes.txt" > ${seen}`])),
    });
    await prompt(url, token, 'bye', { prompt: 'last words' });
    expect((await fetch(`${url}/conversations/bye`, { method: 'DELETE', headers: auth(token) })).status).toBe(200);
    expect(readFileSync(seen, 'utf8')).toBe('last words\n');
    expect(existsSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'bye'))).toBe(false);
  });
});

describe('streams and limits', () => {
  it('drops an SSE client that stops reading, while the agent finishes its turn', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url, lines } = await serve(home, { config: config((c) => (c.server.client_buffer = 4096)) });
    const { port } = new URL(url);
    await new Promise<void>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: '/conversations/slow/sandbox/x', headers: auth(token) },
        (res) => {
          res.pause(); // never read: the server's buffer for this client fills up
          // Dropping this client resets its connection: expected here, whenever it comes.
          res.on('error', () => undefined);
          resolve();
        },
      );
      req.on('error', () => undefined);
      req.end(JSON.stringify({ prompt: 'lines:3000 flood' }));
    });
    await waitUntil(
      async () => (await getJson(url, token, '/conversations/slow')).json.conversation.status === 'completed' || undefined,
      20_000,
      'the turn to complete',
    );
    expect(lines.some((l) => l.includes('dropped_slow_client'))).toBe(true);
    const events = await readSse(await fetch(`${url}/conversations/slow/events`, { headers: auth(token, { 'last-event-id': '0' }) }));
    expect(events.at(-1)!.event).toBe('usage');
    expect(events.length).toBeGreaterThan(3000);
  });

  it('sends heartbeat comments on idle streams', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, { config: config((c) => (c.server.sse_heartbeat = 100)) });
    const res = await fetch(`${url}/conversations/hb/sandbox/x`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:450 wait' }),
    });
    const text = await res.text();
    expect(text).toContain(': heartbeat');
    expect(text).toContain('event: usage');
  });

  it('DELETE with terminate=false keeps the sandbox workspace; bad terminate values are 400', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home);
    await prompt(url, token, 'keep', { prompt: 'hi' });
    expect((await fetch(`${url}/conversations/keep?terminate=maybe`, { method: 'DELETE', headers: auth(token) })).status).toBe(400);
    const del = await fetch(`${url}/conversations/keep?terminate=false`, { method: 'DELETE', headers: auth(token) });
    expect(await del.json()).toMatchObject({ deleted: 'keep', terminated: false });
    const kept = readdirSync(join(home, 'server', 'accounts', 'alice', 'sandboxes'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(home, 'server', 'accounts', 'alice', 'sandboxes', kept[0]!, 'notes.txt'), 'utf8')).toBe('hi\n');
    expect((await fetch(`${url}/conversations/keep`, { method: 'DELETE', headers: auth(token) })).status).toBe(404);
  });

  it('ready: not ready when the store is unreachable; stopping refuses new work with 503', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url, server, warnings } = await serve(home, {
      config: config((c) => (c.sync.store = join(home, 'no', 'such', 'store'))),
      host: '127.0.0.2',
    });
    expect(isLoopback('127.0.0.2')).toBe(true);
    expect(warnings.some((w) => w.includes('UNSANDBOXED'))).toBe(true);
    const h = await fetch(`${url}/ready`);
    expect(h.status).toBe(503);
    expect(await h.json()).toMatchObject({ status: 'not_ready', checks: { store: { ok: false } } });
    const stopping = server.stop('test');
    running.splice(running.indexOf(server), 1);
    await stopping;
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    void token;
  });

  it('warns when bound beyond loopback, says when there are no tokens, and fails clearly on a taken port', async () => {
    const home = tempDir();
    const { warnings, server } = await serve(home, { host: '0.0.0.0' });
    expect(warnings.some((w) => w.includes('TLS proxy'))).toBe(true);
    // Said once the state is open, just after the server listens.
    await waitUntil(() => warnings.some((w) => w.includes('no API tokens')) || undefined, 10_000, 'the warning about tokens');
    expect(isLoopback('0.0.0.0')).toBe(false);
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as AddressInfo).port;
    await expect(
      startServer({
        home,
        config: config(),
        host: '127.0.0.1',
        port,
        local: true,
        recover: false,
        version: 't',
        atlasCommand: { command: 'x', args: [] },
        write: () => undefined,
        warn: () => undefined,
      }),
    ).rejects.toThrow(/EADDRINUSE/);
    blocker.close();
    // Without --local the sandbox must be usable: here it is not (no tools on PATH).
    const unusable = await sandboxReadiness(false, { PATH: '/nonexistent' });
    expect(unusable).toMatchObject({ ready: false, mode: 'sandbox' });
    expect(unusable.detail).toContain('cannot run the sandbox');
    if (!skipSandbox) {
      const sandboxed = await startServer({
        home,
        config: config(),
        host: '127.0.0.1',
        port: 0,
        local: false,
        recover: false,
        version: 't',
        atlasCommand: { command: 'x', args: [] },
        write: () => undefined,
        warn: () => undefined,
      });
      const health = (await (await fetch(`${sandboxed.url}/ready`)).json()) as { sandbox: unknown };
      expect(health.sandbox).toMatchObject({ ready: true, mode: 'sandbox' });
      await sandboxed.stop('test');
    }
    void server;
  });
});

describe('edges', () => {
  it('the event log numbers events from 1 in the order appended, replays after an id and follows what comes next', async () => {
    const home = tempDir();
    const state = new LazyState(home, '');
    const errors: Error[] = [];
    const log = new EventLog(
      'conversation:alice/edge',
      () => state.get(),
      (e) => errors.push(e),
    );
    await Promise.all([log.append('a', {}), log.append('b', { x: 1 }), log.append('c', {})]);
    expect((await log.since(0)).map((e) => [e.id, e.type])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(await log.since(3)).toEqual([]);
    expect(
      await new EventLog(
        'conversation:alice/edge',
        () => state.get(),
        () => undefined,
      ).readLastId(),
    ).toBe(3);
    const seen: number[] = [];
    const replayed: number[][] = [];
    const stop = log.follow(1, (e) => seen.push(e.id), { onReplay: (past) => replayed.push(past.map((e) => e.id)) });
    await log.append('d', {});
    await waitUntil(() => seen.includes(4) || undefined, 5_000, 'the live event');
    stop();
    await log.append('e', {});
    expect(replayed).toEqual([[2, 3]]);
    expect(seen).toEqual([4]);
    expect(errors).toEqual([]);
    await state.close();
  });

  it('routes: 404, 405 with Allow, ids validated', () => {
    const router = new Router<string>().add('GET', '/a/:id', 'get').add('DELETE', '/a/:id', 'del');
    expect(router.match('GET', '/a/x1').route.handler).toBe('get');
    expect(router.match('HEAD', '/a/x1').route.handler).toBe('get');
    expect(() => router.match('POST', '/a/x1')).toThrow(expect.objectContaining({ status: 405, extra: { allow: 'GET, DELETE' } }));
    expect(() => router.match('GET', '/b')).toThrow(expect.objectContaining({ status: 404 }));
    expect(() => router.match('GET', '/a/..%2f')).toThrow(HttpError);
    expect(() => pathId('%E0%A4%A', 'id')).toThrow(HttpError);
  });

  it('tokens: looked up by hash in the state, a revoked token stops working for good, an old tokens.json is adopted when the state first opens', async () => {
    const home = tempDir();
    const a = await createToken(home, 'alice');
    const b = await createToken(home, 'bob');
    let handle = new LazyState(home, '');
    const verifier = new TokenVerifier(() => handle.get());
    expect(await verifier.account(a.token)).toBe('alice');
    expect(await verifier.account(b.token)).toBe('bob');
    expect(await verifier.account('atlas_wrong')).toBeUndefined();
    await revokeToken(home, a.record.id);
    expect(await verifier.account(a.token)).toBeUndefined();
    expect((await listTokens(home)).map((t) => t.account)).toEqual(['bob']);
    await expect(revokeToken(home, a.record.id)).rejects.toThrow(/no token/);
    await expect(revokeToken(tempDir(), 'tok-1')).rejects.toThrow(/no token/);
    await handle.close();
    // A tokens.json from before the state: adopted when a home's state first opens, its tokens work.
    const legacy = {
      id: 'tok-legacy1',
      account: 'carol',
      sha256: createHash('sha256').update('atlas_legacy').digest('hex'),
      created_at: '2026-01-01T00:00:00.000Z',
    };
    const older = tempDir();
    mkdirSync(join(older, 'server'), { recursive: true });
    writeFileSync(tokensPath(older), JSON.stringify({ version: 1, tokens: [legacy] }));
    handle = new LazyState(older, '');
    const adopted = new TokenVerifier(() => handle.get());
    expect(await adopted.account('atlas_legacy')).toBe('carol');
    expect(readTokens(older)).toHaveLength(1);
    await handle.close();
    // Only then: a tokens.json written later is not read again by the next server (nor token command) …
    writeFileSync(tokensPath(home), JSON.stringify({ version: 1, tokens: [legacy, a.record] }));
    handle = new LazyState(home, '');
    expect(await verifier.account('atlas_legacy')).toBeUndefined();
    // … but `atlas serve migrate` brings it in, and a revoked token among them does not come back.
    const report = await importFileState(home, await handle.get());
    expect(report).toMatchObject({ tokens: 1 });
    expect(await verifier.account('atlas_legacy')).toBe('carol');
    expect(await verifier.account(a.token)).toBeUndefined();
    // A damaged file stops a new home's state from opening, naming the file (no one is let in meanwhile).
    const damaged = tempDir();
    mkdirSync(join(damaged, 'server'), { recursive: true });
    writeFileSync(tokensPath(damaged), '{"tokens": [{"id": 1}]}');
    expect(() => readTokens(damaged)).toThrow(/not a valid token file/);
    await expect(createToken(damaged, 'bob')).rejects.toThrow(/not a valid token file/);
    chmodSync(tokensPath(damaged), 0o000);
    if (process.getuid?.() !== 0) expect(() => readTokens(damaged)).toThrow(/cannot read/);
    await handle.close();
  });

  it('bodies: wrong media type 415, non-object 400, empty is {}', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home);
    const post = (body: string, type = 'application/json') =>
      fetch(`${url}/conversations/x/sandbox/y`, { method: 'POST', headers: { ...auth(token), 'content-type': type }, body });
    expect((await post('hi', 'text/plain')).status).toBe(415);
    expect(((await (await post('[1]')).json()) as any).error.code).toBe('invalid_body');
    expect(((await (await post('')).json()) as any).error.field).toBe('prompt');
    expect(((await (await post('{"prompt": 5}')).json()) as any).error.message).toContain('must be a string');
    expect(((await (await post('{"prompt": "  "}')).json()) as any).error.message).toContain('must not be empty');
    expect(((await (await post('{"prompt": "hi", "agent_id": 3}')).json()) as any).error.field).toBe('agent_id');
    expect(
      (
        (await (
          await fetch(`${url}/conversations/x`, { method: 'DELETE', headers: auth(token), body: '{"terminate": "yes"}' })
        ).json()) as any
      ).error.field,
    ).toBe('terminate');
  });
});

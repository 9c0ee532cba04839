// What API clients expect (issue 19): the OpenAPI document covers every route and docs/server.md
// names each; pagination with cursors and filters (through 10,000 messages); tokens that expire
// or only read; CORS for configured origins only; /metrics; error bodies and logs with nothing
// internal or secret in them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import { createToken } from '../src/server/accounts/tokens.js';
import { OPENAPI_PATHS } from '../src/server/api/openapi.js';
import { buildRoutes } from '../src/server/api/routes.js';
import type { ServerContext } from '../src/server/http/context.js';
import { makeRedactor } from '../src/server/http/redact.js';
import { atlasSync, REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, getJson, prompt } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

const checked = checkResponses();
const serve = inProcessServers();

describe('the OpenAPI document', () => {
  it('describes every route of the router, and docs/server.md names every documented path', async () => {
    const routes = buildRoutes({ config: defaultConfig() } as ServerContext, {} as never, {} as never).list();
    const documented = Object.entries(OPENAPI_PATHS).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    // Parameter names may differ between the router and the document; the shapes must not.
    const shape = (p: string) => p.replace(/:\w+|\{\w+\}/g, '{}');
    const shapes = documented.map(shape);
    for (const r of routes) expect(shapes, `${r.method} ${r.pattern}`).toContain(shape(`${r.method} ${r.pattern}`));
    const docs = readFileSync(join(REPO_ROOT, 'docs', 'server.md'), 'utf8');
    const missing = documented.filter((d) => !docs.includes(d));
    expect(missing).toEqual([]);
  });

  it('is served at /openapi.json without a token', async () => {
    const { url } = await serve(tempDir());
    const doc: any = await (await fetch(`${url}/openapi.json`)).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/conversations/{id}/cancel');
    expect(checked.checked()).toBeGreaterThan(0);
  });
});

describe('pagination and filters', () => {
  it('pages conversations with a cursor, filters by state and time, and refuses bad limits and cursors', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home);
    for (const id of ['a1', 'a2', 'a3']) expect((await prompt(url, token, id, { prompt: id === 'a2' ? 'fail' : 'hi' })).status).toBe(200);
    const first = await getJson(url, token, '/conversations?limit=2');
    expect(first.json.conversations).toHaveLength(2);
    const second = await getJson(url, token, `/conversations?limit=2&cursor=${first.json.next_cursor}`);
    expect(second.json.conversations).toHaveLength(1);
    expect(second.json.next_cursor).toBeNull();
    expect([...first.json.conversations, ...second.json.conversations].map((c: any) => c.id).sort()).toEqual(['a1', 'a2', 'a3']);
    expect((await getJson(url, token, '/conversations?state=failed')).json.conversations.map((c: any) => c.id)).toEqual(['a2']);
    expect((await getJson(url, token, '/conversations?since=2999-01-01T00:00:00Z')).json.conversations).toEqual([]);
    expect((await getJson(url, token, '/conversations?until=2999-01-01T00:00:00Z')).json.conversations).toHaveLength(3);
    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'cursor=%%%', 'state=nope', 'since=yesterday']) {
      const r = await getJson(url, token, `/conversations?${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.json.error.code).toBe('invalid_field');
    }
    const tasks = await getJson(url, token, '/tasks?limit=5');
    expect(tasks.json).toEqual({ tasks: [], next_cursor: null });
    expect((await getJson(url, token, '/tasks?state=awaiting_human')).json).toEqual({ tasks: [], next_cursor: null });
    // A state no task can be in is a mistake to say, not an empty list.
    const badState = await getJson(url, token, '/tasks?state=waiting');
    expect(badState.status).toBe(400);
    expect(badState.json.error).toMatchObject({
      code: 'invalid_field',
      field: 'state',
      message: expect.stringContaining('awaiting_human'),
    });
    // Events as JSON pages, resumable from next_cursor.
    const page = await fetch(`${url}/conversations/a1/events?limit=2`, { headers: auth(token, { accept: 'application/json' }) });
    const body: any = await page.json();
    expect(body.events.map((e: any) => e.id)).toEqual([1, 2]);
    const rest: any = await (
      await fetch(`${url}/conversations/a1/events?cursor=${body.next_cursor}`, { headers: auth(token, { accept: 'application/json' }) })
    ).json();
    expect(rest.events[0].id).toBe(3);
    expect(rest.next_cursor).toBeNull();
    expect(
      (await fetch(`${url}/conversations/a1/events?cursor=abc`, { headers: auth(token, { accept: 'application/json' }) })).status,
    ).toBe(400);
  });

  it('pages through 10,000 messages of a conversation with no repeat and no gap', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home);
    expect((await prompt(url, token, 'big', { prompt: 'lines:10000' })).status).toBe(200);
    const keys: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null) {
      const r = await getJson(url, token, `/conversations/big/messages?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      keys.push(...r.json.messages.map((m: any) => m.key));
      cursor = r.json.next_cursor;
      pages++;
    }
    expect(keys.length).toBeGreaterThanOrEqual(10_000);
    expect(new Set(keys).size).toBe(keys.length);
    expect(pages).toBe(Math.ceil(keys.length / 1000));
    expect(keys.filter((k) => k.startsWith('msg_line_'))).toHaveLength(10_000);
    // Without limit: the first 100.
    expect((await getJson(url, token, '/conversations/big/messages')).json.messages).toHaveLength(100);
  }, 120_000);
});

describe('tokens, CORS, metrics, logs and errors', () => {
  it('an expired token is refused (token_expired); a read-only token reads but cannot write', async () => {
    const home = tempDir();
    const created = atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice', '--read-only', '--expires-in', '30d'], {
      env: { ATLAS_HOME: home },
    });
    expect(created.code).toBe(0);
    const ro = JSON.parse(created.stdout);
    expect(ro).toMatchObject({ read_only: true, account: 'alice' });
    expect(Date.parse(ro.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(atlasSync(['serve', 'token', 'create', '--account', 'alice', '--expires-in', 'soon'], { env: { ATLAS_HOME: home } }).code).toBe(
      2,
    );
    // Past the longest lifetime: the message says what is accepted.
    const tooLong = atlasSync(['serve', 'token', 'create', '--account', 'alice', '--expires-in', '99999d'], { env: { ATLAS_HOME: home } });
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain('days up to 9999d');
    const listed = atlasSync(['serve', 'token', 'list'], { env: { ATLAS_HOME: home } });
    expect(listed.stdout).toContain('read-only');
    const old = await createToken(home, 'alice', new Date(Date.now() - 7_200_000), { expiresInMs: 3_600_000 });
    const { url } = await serve(home);
    expect((await getJson(url, ro.token, '/conversations')).status).toBe(200);
    const write = await fetch(`${url}/conversations/c1/sandbox/sb`, {
      method: 'POST',
      headers: auth(ro.token),
      body: JSON.stringify({ prompt: 'hi' }),
    });
    expect(write.status).toBe(403);
    expect(((await write.json()) as any).error.code).toBe('read_only_token');
    const expired = await getJson(url, old.token, '/conversations');
    expect(expired.status).toBe(401);
    expect(expired.json.error.code).toBe('token_expired');
  });

  it('CORS headers only for configured origins; preflights answer 204 or 403', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(
      home,
      agentConfig((c) => (c.server.cors_origins = ['https://board.example'])),
    );
    const ok = await fetch(`${url}/conversations`, { headers: auth(token, { origin: 'https://board.example' }) });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://board.example');
    const other = await fetch(`${url}/conversations`, { headers: auth(token, { origin: 'https://evil.example' }) });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${url}/conversations`, {
      method: 'OPTIONS',
      headers: { origin: 'https://board.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toContain('authorization');
    const refused = await fetch(`${url}/conversations`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('/metrics counts turns, tokens, durations and requests; the log carries no token and no prompt', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url, lines } = await serve(home);
    expect((await prompt(url, token, 'm1', { prompt: 'a secret prompt' })).status).toBe(200);
    await getJson(url, token, '/conversations/nope');
    const res = await fetch(`${url}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/atlas_turns_total\{outcome="ok"\} 1/);
    expect(text).toMatch(/atlas_tokens_total\{kind="input"\} 100/);
    expect(text).toMatch(/atlas_turn_duration_seconds_count 1/);
    expect(text).toMatch(/atlas_http_errors_total\{code="not_found"\} 1/);
    expect(text).toMatch(/atlas_running\{kind="conversations"\} 0/);
    expect(text).toMatch(/atlas_queued\{kind="turn_starts"\} 0/);
    expect(text).toContain('atlas_nodejs_eventloop_lag_p99_seconds');
    expect(text).not.toContain('alice');
    const log = lines.join('\n');
    expect(log).not.toContain(token);
    expect(log).not.toContain('a secret prompt');
    expect(lines.some((l) => JSON.parse(l).token_id?.startsWith('tok-'))).toBe(true);
  });

  it('error bodies: a code, a message and the request id; no server paths, store endpoint or CLI hints', async () => {
    const home = tempDir();
    const config = agentConfig((c) => {
      c.sync.store = 's3://bucket/prefix';
      c.sync.s3.endpoint = 'http://user:pw@10.1.2.3:9000';
    });
    const redact = makeRedactor(home, config);
    expect(redact(`cannot read ${home}/server/tokens.json`)).toBe('cannot read <server>/server/tokens.json');
    expect(redact('push to s3://bucket/prefix via http://user:pw@10.1.2.3:9000 failed')).toBe('push to <store> via <store> failed');
    expect(redact('see https://u:p@example.com/x')).toBe('see https://example.com/x');
    expect(redact('no token (run `atlas serve token create --account NAME`)')).toBe('no token');
    expect(redact('file /tmp/abc/def/x.txt is gone')).toBe('file …/x.txt is gone');
    expect(redact('no route /conversations/a/b')).toBe('no route /conversations/a/b');
    config.lifecycle.on_cold_start = [`node -e "console.error('cannot reach https://user:pw@store.example/x'); process.exit(1)"`];
    const { url, lines } = await serve(home, config);
    const r = await fetch(`${url}/conversations`, { headers: { 'x-request-id': 'req-42' } });
    // Whatever a layer below logs or throws, a credential in a URL is taken out.
    const { token } = await createToken(home, 'alice');
    const failed = await prompt(url, token, 'c1', { prompt: 'hi' });
    expect(failed.status).toBe(502);
    expect(JSON.stringify(failed.json)).not.toContain('user:pw');
    expect(lines.join('\n')).toContain('cold start failed');
    expect(lines.join('\n')).not.toContain('user:pw');
    expect(lines.join('\n')).toContain('https://store.example/x');
    const body: any = await r.json();
    expect(body).toEqual({ error: { code: 'unauthorized', message: expect.any(String), request_id: 'req-42' } });
    expect(body.error.message).not.toContain('atlas ');
  });
});

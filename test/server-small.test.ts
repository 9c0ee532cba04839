// Issue 37's smaller items: a NUL in a prompt is 400 (it failed the turn with Node's own message);
// PUT on the public routes is 405 with Allow (it was 404); the OpenAPI document refuses what the
// server refuses (an empty or blank prompt, a NUL); a path's dot segments are 400, not resolved;
// an interrupted turn leaves the totals partial.
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { openApiDocument } from '../src/server/api/openapi.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, getJson, readSse, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();

describe('smaller edges', () => {
  it('a NUL in a prompt is 400 naming the field; PUT on /health, /ready, /metrics, /openapi.json is 405 with Allow', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    const r = await fetch(`${url}/conversations/c1/sandbox/s1`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'a\u0000b' }),
    });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: { code: 'invalid_field', field: 'prompt' } });
    for (const path of ['/health', '/ready', '/metrics', '/openapi.json']) {
      const put = await fetch(`${url}${path}`, { method: 'PUT' });
      expect(put.status, path).toBe(405);
      expect(put.headers.get('allow')).toBe('GET, HEAD');
      expect(await put.json()).toMatchObject({ error: { code: 'method_not_allowed' } });
    }
  });

  it('a path with a dot segment is 400, not resolved (/conversations/../events was /events)', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { server } = await serve(home, agentConfig());
    for (const path of ['/conversations/../events', '/conversations/./c1', '/conversations/%2e%2e/events']) {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: server.port, path, headers: auth(token) }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'invalid_path' } });
    }
  });

  it('a turn stopped by its server (interrupted) leaves the totals partial: true, in its usage event and the record', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { server, url, release } = await serve(
      home,
      agentConfig((c) => (c.server.grace_period = 100)),
    );
    const res = await fetch(`${url}/conversations/cut/sandbox/cut`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:20000 long' }),
    });
    expect(res.status).toBe(200);
    const events = readSse(res);
    await waitUntil(
      async () => ((await getJson(url, token, '/conversations/cut')).json.running ? true : undefined),
      10_000,
      'the turn to run',
    );
    release();
    await server.stop('test');
    const usage = (await events).find((e) => e.event === 'usage');
    expect(usage?.data).toMatchObject({ ok: false, usage: { partial: true }, conversation: { partial: true } });
    const again = await serve(home, agentConfig());
    const c = await getJson(again.url, token, '/conversations/cut');
    expect(c.json.conversation).toMatchObject({ status: 'interrupted', stats: { partial: true } });
  });

  it('paging the conversations skips none that gets a turn meanwhile', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    for (const id of ['p1', 'p2', 'p3']) {
      const r = await fetch(`${url}/conversations/${id}/sandbox/${id}`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'hi' }),
      });
      await r.text();
    }
    const order: string[] = (await getJson(url, token, '/conversations?limit=10')).json.conversations.map((c: any) => c.id);
    expect([...order].sort()).toEqual(['p1', 'p2', 'p3']);
    const first = await getJson(url, token, '/conversations?limit=1');
    expect(first.json.conversations.map((c: any) => c.id)).toEqual([order[0]]);
    // The last one, not listed yet, gets a turn in a later second (timestamps have seconds): its
    // last update is now the newest.
    const latest = first.json.conversations[0].updated_at;
    await waitUntil(() => (new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') > latest ? true : undefined), 5_000, 'the next second');
    await (
      await fetch(`${url}/conversations/${order[2]}/sandbox/${order[2]}`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: 'again' }),
      })
    ).text();
    const seen = [order[0]];
    let cursor: string | null = first.json.next_cursor;
    while (cursor) {
      const page = await getJson(url, token, `/conversations?limit=1&cursor=${encodeURIComponent(cursor)}`);
      seen.push(...page.json.conversations.map((c: any) => c.id));
      cursor = page.json.next_cursor;
    }
    expect(seen).toEqual(order);
  });

  it('the OpenAPI document refuses an empty or blank prompt and a NUL, as the server does', () => {
    const doc = openApiDocument('test') as any;
    const prompt =
      doc.paths['/conversations/{conversationId}/sandbox/{sandboxId}'].post.requestBody.content['application/json'].schema.properties
        .prompt;
    expect(prompt.minLength).toBe(1);
    const pattern = new RegExp(prompt.pattern);
    expect(['', '   ', 'a\u0000b'].map((v) => pattern.test(v))).toEqual([false, false, false]);
    expect([' a ', 'hello\nworld'].map((v) => pattern.test(v))).toEqual([true, true]);
  });
});

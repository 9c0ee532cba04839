// `atlas serve` as users run it: a real child process on 127.0.0.1, real tokens from the CLI, a
// real HTTP client (fetch) and SSE parser, the command agent printing stream-json.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import {
  AGENT_FLAGS,
  auth,
  createToken,
  getJson,
  prompt,
  readSse,
  readTurn,
  serversOfThisFile,
  startServe,
  waitUntil,
} from './helpers/server-fixtures.js';

checkResponses();

const servers = serversOfThisFile();

async function serve(home: string, args: string[] = [], flags: string[] = AGENT_FLAGS): Promise<ServeProcess> {
  const s = await startServe(home, args, { flags });
  servers.push(s);
  return s;
}

describe('tokens', () => {
  it('prints a token once, keeps only its hash in the 0600 state file, lists and revokes; a revoked token gets 401 at once', async () => {
    const home = tempDir();
    const created = atlasSync(['serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: home } });
    expect(created.code).toBe(0);
    const token = /(atlas_\S+)/.exec(created.stdout)![1]!;
    // Tokens live in the server state: the embedded SQLite file, 0600 in a 0700 folder, hashes only.
    const file = join(home, 'server', 'state.db');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'server')).mode & 0o777).toBe(0o700);
    for (const f of readdirSync(join(home, 'server')).filter((n) => n.startsWith('state.db'))) {
      expect(readFileSync(join(home, 'server', f)).includes(token)).toBe(false);
    }
    const list = JSON.parse(atlasSync(['--json', 'serve', 'token', 'list'], { env: { ATLAS_HOME: home } }).stdout);
    expect(list.tokens).toHaveLength(1);
    expect(JSON.stringify(list)).not.toContain(token);
    expect(atlasSync(['serve', 'token', 'create', '--account', '../x'], { env: { ATLAS_HOME: home } }).code).toBe(2);

    const s = await serve(home);
    expect((await getJson(s.url, token, '/conversations')).status).toBe(200);
    const revoked = atlasSync(['serve', 'token', 'revoke', list.tokens[0].id], { env: { ATLAS_HOME: home } });
    expect(revoked.code).toBe(0);
    expect((await getJson(s.url, token, '/conversations')).status).toBe(401);
    expect(atlasSync(['serve', 'token', 'revoke', 'tok-00000000'], { env: { ATLAS_HOME: home } }).code).toBe(4);
  });
});

describe('conversations over HTTP', () => {
  it('streams a turn (messages, tool use and result, usage), resumes the session on the next prompt, keeps stats and messages', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home);
    expect(s.stderr()).toContain('UNSANDBOXED');

    const first = await prompt(s.url, token, 'conv-1', { prompt: 'write the notes', agent_id: 'helper' });
    expect(first.status).toBe(200);
    const types = first.events.map((e) => e.event);
    expect(types).toEqual(['turn_started', 'message', 'message', 'message', 'tool_use', 'message', 'tool_result', 'usage']);
    expect(first.events.map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(first.events[1]!.data.message).toMatchObject({ role: 1, body: 'write the notes' });
    expect(first.events[6]!.data).toMatchObject({ id: 'toolu_1', name: 'Write', status: 'success', output: 'written' });
    const usage1 = first.events.at(-1)!.data;
    expect(usage1).toMatchObject({
      ok: true,
      turn: 1,
      usage: { total_input_tokens: 100, total_output_tokens: 20, cache_read_tokens: 5, cache_creation_tokens: 3, cost_usd: 0.001 },
    });
    expect(usage1.conversation).toMatchObject({ total_input_tokens: 100, total_output_tokens: 20, total_cache_tokens: 8 });

    const second = await prompt(s.url, token, 'conv-1', { prompt: 'and more' });
    expect(second.events[0]!.data.resumes_session).toBe(usage1.session_id);
    const usage2 = second.events.at(-1)!.data;
    expect(usage2.session_id).toBe(usage1.session_id);
    expect(usage2.conversation).toMatchObject({ total_input_tokens: 200, total_output_tokens: 40, messages_exchanged: 6 });
    expect(second.events.find((e) => e.event === 'message' && e.data.message.role === 2)).toBeDefined();

    const got = await getJson(s.url, token, '/conversations/conv-1');
    expect(got.json.conversation).toMatchObject({
      id: 'conv-1',
      account: 'alice',
      agent_id: 'helper',
      sandbox_id: 'sb1',
      status: 'completed',
      turns: 2,
    });
    expect(got.json.conversation.stats).toMatchObject({ messages_exchanged: 6, total_input_tokens: 200 });
    const messages = await getJson(s.url, token, '/conversations/conv-1/messages');
    // Each tool result is joined into the assistant message that called the tool.
    expect(messages.json.messages.map((m: any) => m.role)).toEqual([1, 2, 2, 1, 2, 2]);
    expect(messages.json.messages[2].tool_calls[0]).toMatchObject({ id: 'toolu_1', status: 'success', output: 'written' });
    // The agent worked in the conversation's own workspace.
    expect(readFileSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'conv-1', 'workspace', 'notes.txt'), 'utf8')).toBe(
      'write the notes\nand more\n',
    );
    expect((await getJson(s.url, token, '/conversations')).json.conversations.map((c: any) => c.id)).toEqual(['conv-1']);

    // The access log: request id, account, route, status, duration; never the token or the prompt.
    const requests = s.lines.map((l) => JSON.parse(l)).filter((e) => e.msg === 'request');
    expect(requests.find((r) => r.route === 'POST /conversations/:conversationId/sandbox/:sandboxId')).toMatchObject({
      account: 'alice',
      status: 200,
    });
    expect(requests.every((r) => typeof r.request_id === 'string' && typeof r.duration_ms === 'number')).toBe(true);
    const all = s.lines.join('\n');
    expect(all).not.toContain(token);
    expect(all).not.toContain('write the notes');

    const del = await fetch(`${s.url}/conversations/conv-1`, { method: 'DELETE', headers: auth(token) });
    expect(await del.json()).toMatchObject({ deleted: 'conv-1', terminated: true });
    expect((await getJson(s.url, token, '/conversations/conv-1')).status).toBe(404);
  });

  it('a client that reconnects with Last-Event-ID gets what it missed, then the live stream; a gone client does not stop the agent', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home);
    const abort = new AbortController();
    const res = await fetch(`${s.url}/conversations/c2/sandbox/sb`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:1500 slow one' }),
      signal: abort.signal,
    });
    const early = await readSse(res, (e) => e.event === 'message', abort);
    expect(early.map((e) => e.id)).toEqual(['1', '2']);

    const again = await fetch(`${s.url}/conversations/c2/events`, { headers: auth(token, { 'last-event-id': '2' }) });
    const rest = await readSse(again);
    expect(rest[0]!.id).toBe('3');
    expect(rest.at(-1)!.event).toBe('usage');
    expect(rest.at(-1)!.data.ok).toBe(true);
    // A replay of an idle conversation ends after its last event.
    const replay = await readSse(await fetch(`${s.url}/conversations/c2/events?last_event_id=5`, { headers: auth(token) }));
    expect(replay.map((e) => Number(e.id))).toEqual([6, 7, 8]);
    const bad = await fetch(`${s.url}/conversations/c2/events`, { headers: auth(token, { 'last-event-id': 'x' }) });
    expect(bad.status).toBe(400);
  });

  it("refuses what it must: 401, another account's 404, 413, 400 naming the field, bad ids, 404 and 405, 409 for a busy conversation", async () => {
    const home = tempDir();
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const s = await serve(home, [], [...AGENT_FLAGS, '-c', 'server.max_body=2048']);
    expect((await prompt(s.url, alice, 'mine', { prompt: 'secret plans' })).status).toBe(200);

    expect((await fetch(`${s.url}/conversations`)).status).toBe(401);
    const wrong = await fetch(`${s.url}/conversations`, { headers: { authorization: 'Bearer atlas_not-a-token' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('Bearer');

    for (const path of ['/conversations/mine', '/conversations/mine/messages', '/conversations/mine/events']) {
      const r = await fetch(`${s.url}${path}`, { headers: auth(bob) });
      expect(r.status, path).toBe(404);
      expect(await r.text()).not.toContain('secret');
    }
    expect((await getJson(s.url, bob, '/conversations')).json.conversations).toEqual([]);
    expect((await fetch(`${s.url}/conversations/mine`, { method: 'DELETE', headers: auth(bob) })).status).toBe(404);
    // Bob may use the same id: it is his own conversation, alice's stays untouched.
    expect((await prompt(s.url, bob, 'mine', { prompt: 'bob here' })).status).toBe(200);
    expect((await getJson(s.url, alice, '/conversations/mine/messages')).json.messages[0].body).toBe('secret plans');

    const big = await fetch(`${s.url}/conversations/x/sandbox/y`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ prompt: 'x'.repeat(5000) }),
    });
    expect(big.status).toBe(413);
    const missing = await fetch(`${s.url}/conversations/x/sandbox/y`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ provider: 'claude' }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).error).toMatchObject({ code: 'invalid_field', field: 'prompt' });
    const badProvider = await prompt(s.url, alice, 'x', { prompt: 'hi', provider: 'gpt' });
    expect(badProvider.json.error.field).toBe('provider');
    const notJson = await fetch(`${s.url}/conversations/x/sandbox/y`, { method: 'POST', headers: auth(alice), body: '{nope' });
    expect(((await notJson.json()) as any).error.code).toBe('invalid_json');
    for (const id of ['..%2F..%2Fetc', '..%5Cx', 'a.b', '.hidden', '%00x']) {
      const r = await fetch(`${s.url}/conversations/${id}/sandbox/y`, {
        method: 'POST',
        headers: auth(alice),
        body: JSON.stringify({ prompt: 'hi' }),
      });
      expect(r.status, id).toBe(400);
      expect(((await r.json()) as any).error.field).toBe('conversationId');
    }
    // "%2e%2e" is resolved by URL parsing to a path that matches no route: 404, nothing read.
    expect((await fetch(`${s.url}/conversations/%2e%2e/sandbox/y`, { method: 'POST', headers: auth(alice), body: '{}' })).status).toBe(404);
    expect((await fetch(`${s.url}/nowhere`, { headers: auth(alice) })).status).toBe(404);
    const put = await fetch(`${s.url}/conversations`, { method: 'PUT', headers: auth(alice) });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET');

    const abort = new AbortController();
    const slow = await fetch(`${s.url}/conversations/busy/sandbox/y`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ prompt: 'sleep:1000' }),
      signal: abort.signal,
    });
    const busy = await prompt(s.url, alice, 'busy', { prompt: 'again' }, 'y');
    expect(busy.status).toBe(409);
    const mismatch = await prompt(s.url, alice, 'mine', { prompt: 'again' }, 'other-sandbox');
    expect(mismatch.json.error).toMatchObject({ code: 'sandbox_mismatch', sandbox_id: 'sb1' });
    await readSse(slow);
  });

  it('a failing OnColdStart hook answers 502 with a JSON error and leaves nothing behind', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home, [], [...AGENT_FLAGS, '-c', 'lifecycle.on_cold_start=echo cannot restore the workspace >&2; exit 7']);
    const r = await prompt(s.url, token, 'cold', { prompt: 'hi' });
    expect(r.status).toBe(502);
    expect(r.json.error).toMatchObject({ code: 'cold_start_failed', removed: true });
    expect(r.json.error.message).toContain('cannot restore the workspace');
    expect(existsSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'cold'))).toBe(false);
    expect((await getJson(s.url, token, '/conversations')).json.conversations).toEqual([]);
  });

  it('limits concurrent streams per account (429) but not across accounts', async () => {
    const home = tempDir();
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const s = await serve(home, [], [...AGENT_FLAGS, '-c', 'server.max_streams_per_account=2']);
    const open = await Promise.all(
      ['a1', 'a2'].map((id) =>
        fetch(`${s.url}/conversations/${id}/sandbox/x`, {
          method: 'POST',
          headers: auth(alice),
          body: JSON.stringify({ prompt: 'sleep:1200' }),
        }),
      ),
    );
    const third = await fetch(`${s.url}/conversations/a3/sandbox/x`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ prompt: 'hi' }),
    });
    expect(third.status).toBe(429);
    expect(((await third.json()) as any).error.code).toBe('too_many_streams');
    expect((await prompt(s.url, bob, 'b1', { prompt: 'hi' })).status).toBe(200);
    await Promise.all(open.map((r) => readSse(r)));
    expect((await prompt(s.url, alice, 'a3', { prompt: 'hi' })).status).toBe(200);
  });

  it('runs 10 conversations at once without errors', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => prompt(s.url, token, `many-${i}`, { prompt: `sleep:200 job ${i}` })),
    );
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
    }
    expect((await getJson(s.url, token, '/conversations')).json.conversations).toHaveLength(10);
    const health: any = await (await fetch(`${s.url}/ready`)).json();
    expect(health).toMatchObject({ status: 'ready', sandbox: { ready: true, mode: 'local' }, running: { conversations: 0 } });
  });

  it('a failing agent ends its turn with an error and the usage event; the conversation is failed but usable', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home);
    const r = await prompt(s.url, token, 'f1', { prompt: 'please fail' });
    expect(r.events.map((e) => e.event)).toContain('error');
    expect(r.events.at(-1)!.data).toMatchObject({ ok: false });
    expect(r.events.at(-1)!.data.error).toContain('exited with code 1');
    expect((await getJson(s.url, token, '/conversations/f1')).json.conversation.status).toBe('failed');
    expect((await prompt(s.url, token, 'f1', { prompt: 'now work' })).events.at(-1)!.data.ok).toBe(true);
  });
});

describe('start-up and stop', () => {
  it('without a usable sandbox refuses to start unless --local, and says why; a bad port or sync.store exits 2', () => {
    const home = tempDir();
    // No bwrap, socat or rg on PATH: the sandbox cannot run.
    const r = atlasSync(['serve', '--port', '0'], { env: { ATLAS_HOME: home, PATH: '/nonexistent' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('sandboxed');
    expect(r.stderr).toContain('--local');
    expect(atlasSync(['serve', '--port', 'x', '--local'], { env: { ATLAS_HOME: home } }).code).toBe(2);
    // A sync.store that cannot be a store: refused before listening, not at each turn's push.
    const badStore = atlasSync(['serve', '--port', '0', '--local'], { env: { ATLAS_HOME: home, ATLAS_SYNC_STORE: 's3:/bucket/x' } });
    expect(badStore.code).toBe(2);
    expect(badStore.stderr).toContain('sync.store s3:/bucket/x: unsupported store');
  });

  it('SIGTERM mid-stream: the stream ends with an interrupted usage event; after a restart the conversation is recovered', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home, [], [...AGENT_FLAGS, '-c', 'server.grace_period=300ms']);
    const res = await fetch(`${s.url}/conversations/long/sandbox/x`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:20000 long job' }),
    });
    const reading = readTurn(res);
    await reading.started;
    s.child.kill('SIGTERM');
    const events = await reading.events;
    expect(events.at(-1)!.data).toMatchObject({ ok: false });
    expect(events.at(-1)!.data.error).toContain('stopped');
    expect(await s.exited).toBe(0);
    expect(s.lines.some((l) => l.includes('"msg":"stopped"'))).toBe(true);

    const again = await serve(home);
    const got = await getJson(again.url, token, '/conversations/long');
    expect(got.json.conversation.status).toBe('interrupted');
    const recovered = await fetch(`${again.url}/conversations/long/recover`, { method: 'POST', headers: auth(token) });
    const rec = await readSse(recovered);
    expect(rec.at(-1)!.data).toMatchObject({ ok: true });
    const messages = (await getJson(again.url, token, '/conversations/long/messages')).json.messages;
    expect(messages.filter((m: any) => m.role === 1).at(-1).body).toContain('long job');
    expect((await fetch(`${again.url}/conversations/long/recover`, { method: 'POST', headers: auth(token) })).status).toBe(409);
  });

  it('a killed server leaves its turn interrupted; --recover at start-up continues it', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await serve(home);
    const res = await fetch(`${s.url}/conversations/crash/sandbox/x`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:1500 crashing job' }),
    });
    // Once the prompt is recorded, the turn runs: then the server dies.
    await readSse(res, (e) => e.event === 'message');
    s.child.kill('SIGKILL');
    await s.exited;
    // The agent of the dead server may still be finishing; its owner (the server) is gone either way.
    const again = await serve(home, ['--recover']);
    await waitUntil(
      async () => (await getJson(again.url, token, '/conversations/crash')).json.conversation.status === 'completed' || undefined,
      20_000,
      'recovery',
    );
    expect(again.lines.some((l) => l.includes('interrupted work found'))).toBe(true);
  });
});

// Work that outlives a request, with the server in this process (the task runs as real `atlas`
// children): a task started, streamed, approved, abandoned; a stop whose grace runs out
// interrupts a conversation, and the next server finds it and recovers it, on request or at
// start-up.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { createToken } from '../src/server/accounts/tokens.js';
import type { RunningServer } from '../src/server/server.js';
import { startServer } from '../src/server/server.js';
import { openState } from '../src/server/state/open.js';
import { ATLAS_BIN, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { addSlowTemplate, auth, getJson, prompt, readSse, readTurn, repoIn, STREAM_AGENT, waitUntil } from './helpers/server-fixtures.js';

checkResponses();

const running: RunningServer[] = [];
beforeAll(() => ensureBuilt());
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop('test over');
});

async function serve(home: string, change: (c: Config) => void = () => undefined, recover = false) {
  const config = defaultConfig();
  config.ai.agent = 'command';
  config.ai.command = `${process.execPath} ${STREAM_AGENT}`;
  change(config);
  const lines: string[] = [];
  const warnings: string[] = [];
  const server = await startServer({
    home,
    config,
    host: '127.0.0.1',
    port: 0,
    local: true,
    recover,
    version: 'test',
    atlasCommand: { command: process.execPath, args: [ATLAS_BIN] },
    write: (l) => lines.push(l),
    warn: (w) => warnings.push(w),
  });
  running.push(server);
  return { server, url: server.url, lines, warnings };
}

async function post(url: string, token: string, path: string, body: unknown = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: auth(token), body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

describe('tasks, in process', () => {
  it('start, events, checkpoint, reject; abandon of an ended task is refused', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, (c) => (c.server.repos_root = root));
    const created = await post(url, token, '/tasks', { repo: join(root, 'demo'), template: 'quick', description: 'in process' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const id = created.json.task.id;
    const events = await readSse(await fetch(`${url}/tasks/${id}/events`, { headers: auth(token) }));
    expect(events.at(-1)!.data).toMatchObject({ state: 'awaiting_human' });
    expect((await post(url, token, `/tasks/${id}/recover`)).status).toBe(409);
    expect((await post(url, token, `/tasks/${id}/checkpoint`)).status).toBe(200);
    expect((await post(url, token, `/tasks/${id}/reject`, { note: 'not now' })).status).toBe(202);
    const after = await readSse(
      await fetch(`${url}/tasks/${id}/events`, { headers: auth(token, { 'last-event-id': String(events.length) }) }),
    );
    expect(after.at(-1)!.data).toMatchObject({ command: 'reject', state: 'failed' });
    const abandon = await post(url, token, `/tasks/${id}/abandon`);
    expect(abandon.status).toBe(409);
    expect(abandon.json.error.code).toBe('abandon_failed');
    expect((await post(url, token, `/tasks/${id}/approve`)).json.error.code).toBe('not_waiting');
    expect((await getJson(url, token, '/tasks')).json.tasks).toHaveLength(1);
    expect((await getJson(url, token, '/tasks/task-20990101-000000')).status).toBe(404);
    expect((await getJson(url, token, '/tasks/nonsense')).status).toBe(404);
  });

  it('abandons a waiting task; a running one is busy (409); a stop past its grace checkpoints and interrupts it; start-up --recover finishes it', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const repo = repoIn(root, 'demo');
    addSlowTemplate(repo, root);
    const { token } = await createToken(home, 'alice');
    const first = await serve(home, (c) => {
      c.server.repos_root = root;
      c.server.grace_period = 200;
    });
    const waiting = await post(first.url, token, '/tasks', { repo: 'demo', template: 'quick' });
    await readSse(await fetch(`${first.url}/tasks/${waiting.json.task.id}/events`, { headers: auth(token) }));
    expect((await post(first.url, token, `/tasks/${waiting.json.task.id}/abandon`, { note: 'changed my mind' })).status).toBe(200);

    const slow = await post(first.url, token, '/tasks', { repo: 'demo', template: 'slow' });
    const id = slow.json.task.id;
    await readSse(
      await fetch(`${first.url}/tasks/${id}/events`, { headers: auth(token) }),
      (e) => e.event === 'state' && e.data.to === 'step_running',
    );
    expect((await post(first.url, token, `/tasks/${id}/approve`)).json.error.code).toBe('task_running');
    const health: any = await (await fetch(`${first.url}/ready`)).json();
    expect(health.running.tasks).toBe(1);
    running.splice(running.indexOf(first.server), 1);
    await first.server.stop('SIGTERM');
    expect(first.lines.some((l) => l.includes('grace period over'))).toBe(true);

    const second = await serve(home, (c) => (c.server.repos_root = root), true);
    // Looked for just after the server listens.
    await waitUntil(
      () => second.lines.some((l) => l.includes('interrupted work found')) || undefined,
      10_000,
      'the cut-off work to be found',
    );
    const events = await readSse(await fetch(`${second.url}/tasks/${id}/events`, { headers: auth(token) }));
    expect(events.at(-1)!.data).toMatchObject({ command: 'recover', state: 'completed' });
  });
});

describe('conversations cut off, in process', () => {
  it('a stop past its grace interrupts the turn; the next server reports it and POST recover continues it', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const first = await serve(home, (c) => (c.server.grace_period = 100));
    const res = await fetch(`${first.url}/conversations/cut/sandbox/x`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:30000 big job' }),
    });
    const reading = readTurn(res);
    await reading.started;
    // The agent has started its session (its run's record names it): then the server stops.
    const runs = join(home, 'server', 'accounts', 'alice', 'conversations', 'cut', 'conversations');
    // (The run's folder and record are written from the thread pool: not there yet is not there.)
    const named = (id: string) =>
      existsSync(join(runs, id, 'conversation.json')) && JSON.parse(readFileSync(join(runs, id, 'conversation.json'), 'utf8')).session_id;
    await waitUntil(() => (existsSync(runs) && readdirSync(runs).some(named)) || undefined, 10_000, 'the agent session');
    expect((await prompt(first.url, token, 'other', { prompt: 'hi' })).status).toBe(200);
    running.splice(running.indexOf(first.server), 1);
    const stopping = first.server.stop('SIGTERM');
    const events = await reading.events;
    await stopping;
    expect(events.at(-1)!.data.error).toContain('stopped');

    const second = await serve(home);
    await waitUntil(
      () => second.warnings.some((w) => w.includes('POST .../recover')) || undefined,
      10_000,
      'the warning about cut-off work',
    );
    const listed = (await getJson(second.url, token, '/conversations')).json.conversations;
    expect(listed.find((c: any) => c.id === 'cut').status).toBe('interrupted');
    expect((await fetch(`${second.url}/conversations/nothing/recover`, { method: 'POST', headers: auth(token) })).status).toBe(404);
    const rec = await readSse(await fetch(`${second.url}/conversations/cut/recover`, { method: 'POST', headers: auth(token) }));
    expect(rec[0]!.data.resumes_session).toMatch(/^sess-/);
    expect(rec.at(-1)!.data.ok).toBe(true);
  });

  it('a turn whose server died (owner gone) is found interrupted and recovered at start-up', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const first = await serve(home);
    expect((await prompt(first.url, token, 'dead', { prompt: 'hello' })).status).toBe(200);
    // As a killed server leaves it: the record says running, owner.json names a process that is gone.
    const dir = join(home, 'server', 'accounts', 'alice', 'conversations', 'dead');
    const state = await openState({ home, url: '' });
    const record = (await state.getConversation('alice', 'dead'))!;
    await state.putConversation({ ...record, status: 'running' });
    await state.close();
    writeFileSync(
      join(dir, 'owner.json'),
      JSON.stringify({
        pid: 2 ** 22 + 7,
        host: hostname(),
        process_start: 'x',
        started_at: record.created_at,
        heartbeat_at: record.created_at,
        heartbeat_interval_ms: 1000,
        stale_threshold_ms: 600_000,
      }),
    );
    running.splice(running.indexOf(first.server), 1);
    await first.server.stop('test');
    const second = await serve(home, () => undefined, true);
    await waitUntil(
      async () => (await getJson(second.url, token, '/conversations/dead')).json.conversation.turns === 2 || undefined,
      15_000,
      'recovery',
    );
    await waitUntil(
      async () => (await getJson(second.url, token, '/conversations/dead')).json.running === false || undefined,
      15_000,
      'recovery to finish',
    );
  });
});

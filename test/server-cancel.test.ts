// Finishing work over the API (issue 19, defect 5): a running turn or task is cancelled (the agent
// stops, the turn ends `cancelled`, the task is checkpointed and parked); a step that was cut off
// is recovered, never approved; recover takes an action; a task's events come in the order they
// happened (a step's start before its output).
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import {
  AGENT_FLAGS,
  addSlowTemplate,
  auth,
  createToken,
  getJson,
  readSse,
  repoIn,
  serversOfThisFile,
  startServe,
  waitUntil,
} from './helpers/server-fixtures.js';

checkResponses();

const servers = serversOfThisFile('SIGTERM');

async function post(url: string, token: string, path: string, body: unknown = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: auth(token), body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

async function taskServer() {
  const home = tempDir();
  const root = tempDir('atlas-repos-');
  const repo = repoIn(root, 'slow');
  addSlowTemplate(repo, root);
  const token = createToken(home, 'alice');
  const s = await startServe(home, [], { flags: [...AGENT_FLAGS, '-c', `server.repos_root=${root}`] });
  servers.push(s);
  return { s, token };
}

describe('tasks: cancel, recover with an action, approve only what waits', () => {
  it('cancels a running task (checkpointed, parked); refuses to approve the cut-off step; recovers it with skip_step', async () => {
    const { s, token } = await taskServer();
    const id = (await post(s.url, token, '/tasks', { repo: 'slow', template: 'slow', description: 'slow one' })).json.task.id as string;
    await readSse(
      await fetch(`${s.url}/tasks/${id}/events`, { headers: auth(token) }),
      (e) => e.event === 'state' && e.data.to === 'step_running',
    );
    const cancelled = await post(s.url, token, `/tasks/${id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.json)).toBe(200);
    expect(cancelled.json).toMatchObject({ task_id: id, action: 'cancel' });
    const page = await fetch(`${s.url}/tasks/${id}/events?limit=1000`, { headers: auth(token, { accept: 'application/json' }) });
    const events = ((await page.json()) as { events: { id: number; type: string; data: any }[] }).events;
    const types = events.map((e) => e.type);
    expect(events.some((e) => e.type === 'checkpoint' && e.data.description === 'cancelled over the API')).toBe(true);
    expect(types.indexOf('cancelled')).toBeGreaterThan(-1);
    expect(types.indexOf('cancelled')).toBeLessThan(types.lastIndexOf('finished'));
    expect((await post(s.url, token, `/tasks/${id}/cancel`)).json.error.code).toBe('not_running');

    const approve = await post(s.url, token, `/tasks/${id}/approve`);
    expect(approve.status).toBe(409);
    expect(approve.json.error).toMatchObject({ code: 'not_waiting' });
    expect(approve.json.error.message).toContain('cut off');
    expect((await post(s.url, token, `/tasks/${id}/recover`, { action: 'manual' })).status).toBe(400);

    const recovered = await post(s.url, token, `/tasks/${id}/recover`, { action: 'skip_step' });
    expect(recovered.status).toBe(202);
    const after = await readSse(
      await fetch(`${s.url}/tasks/${id}/events`, { headers: auth(token, { 'last-event-id': String(events.at(-1)!.id) }) }),
      (e) => e.event === 'finished',
    );
    expect(after.at(-1)!.data).toMatchObject({ command: 'recover', state: 'completed', exit_code: 0 });
    expect(after.some((e) => e.event === 'state' && e.data.trigger === 'step_skipped')).toBe(true);
  });

  it("logs a step's start before its output", async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    const token = createToken(home, 'alice');
    const s = await startServe(home, [], { flags: [...AGENT_FLAGS, '-c', `server.repos_root=${root}`] });
    servers.push(s);
    const id = (await post(s.url, token, '/tasks', { repo: 'demo', template: 'quick', description: 'order' })).json.task.id as string;
    const events = await readSse(await fetch(`${s.url}/tasks/${id}/events`, { headers: auth(token) }), (e) => e.event === 'finished');
    const start = events.findIndex((e) => e.event === 'state' && e.data.to === 'step_running' && e.data.step === 'build');
    const output = events.findIndex((e) => e.event === 'output' && String(e.data.text).includes('hello-from-task'));
    const next = events.findIndex((e) => e.event === 'state' && e.data.step === 'validate');
    expect(start).toBeGreaterThan(-1);
    expect(output).toBeGreaterThan(start);
    expect(next).toBeGreaterThan(output);
  });
});

describe('conversations: cancel', () => {
  it('stops the running turn: it ends cancelled, with a cancelled event before its usage', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const s = await startServe(home);
    servers.push(s);
    const turn = await fetch(`${s.url}/conversations/c1/sandbox/sb`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:20000 long work' }),
    });
    const events = readSse(turn);
    await waitUntil(
      async () => ((await getJson(s.url, token, '/conversations/c1')).json.conversation?.status === 'running' ? true : undefined),
      10_000,
      'the turn to run',
    );
    const started = Date.now();
    const cancelled = await post(s.url, token, '/conversations/c1/cancel');
    expect(cancelled.status, JSON.stringify(cancelled.json)).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(cancelled.json.conversation).toMatchObject({ id: 'c1', status: 'cancelled' });
    const got = await events;
    expect(got.map((e) => e.event).slice(-2)).toEqual(['cancelled', 'usage']);
    expect(got.at(-1)!.data).toMatchObject({ ok: false });
    expect((await post(s.url, token, '/conversations/c1/cancel')).json.error.code).toBe('not_running');
    expect((await post(s.url, token, '/conversations/nope/cancel')).status).toBe(404);
    // A cancelled turn is not work a restart recovers.
    expect((await post(s.url, token, '/conversations/c1/recover')).json.error.code).toBe('nothing_to_recover');
  });
});

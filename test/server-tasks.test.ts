// Tasks over HTTP are ordinary atlas tasks: started by `atlas serve` in a repository inside
// server.repos_root, streamed as events, seen by `atlas status` and `atlas verify`, approved and
// recovered over the API, invisible to other accounts.
import { describe, expect, it } from 'vitest';
import { openState } from '../src/server/state/open.js';
import { atlas, tempDir } from './helpers/core-fixtures.js';
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
} from './helpers/server-fixtures.js';

checkResponses();

const servers = serversOfThisFile('SIGTERM');

async function post(url: string, token: string, path: string, body: unknown = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: auth(token), body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

async function eventsUntilFinished(url: string, token: string, id: string, after = 0) {
  return readSse(await fetch(`${url}/tasks/${id}/events`, { headers: auth(token, { 'last-event-id': String(after) }) }));
}

describe('tasks over HTTP', () => {
  it('starts an ordinary task (atlas status and verify see it), streams its events, approves it; other accounts see nothing', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const repo = repoIn(root, 'demo');
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const s = await startServe(home, [], { flags: [...AGENT_FLAGS, '-c', `server.repos_root=${root}`] });
    servers.push(s);

    const created = await post(s.url, alice, '/tasks', { repo: 'demo', template: 'quick', description: '--ship the demo' });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const id = created.json.task.id as string;
    expect(created.json.events).toBe(`/tasks/${id}/events`);

    const events = await eventsUntilFinished(s.url, alice, id);
    const types = new Set(events.map((e) => e.event));
    for (const t of ['started', 'state', 'output', 'receipt', 'checkpoint', 'finished']) expect(types.has(t), t).toBe(true);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.some((e) => e.event === 'output' && String(e.data.text).includes('hello-from-task'))).toBe(true);
    expect(events.at(-1)!.data).toMatchObject({ command: 'start', state: 'awaiting_human' });

    const status = await atlas(['--json', 'status'], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(JSON.parse(status.stdout).tasks.map((t: any) => t.id)).toContain(id);

    expect((await getJson(s.url, bob, `/tasks/${id}`)).status).toBe(404);
    expect((await getJson(s.url, bob, `/tasks/${id}/events`)).status).toBe(404);
    expect((await post(s.url, bob, `/tasks/${id}/approve`)).status).toBe(404);
    expect((await getJson(s.url, bob, '/tasks')).json.tasks).toEqual([]);
    const mine = await getJson(s.url, alice, `/tasks/${id}`);
    expect(mine.json.hook).toMatchObject({ task_id: id, state: 'awaiting_human' });
    expect((await getJson(s.url, alice, '/tasks')).json.tasks.map((t: any) => t.id)).toEqual([id]);

    // A task another machine holds (its row in a state shared by several servers): 421, naming
    // that machine; another account still gets 404.
    const state = await openState({ home });
    await state.putTask({ ...(await state.getTask(id))!, task_id: 'task-20261126-070000', host: 'build-elsewhere' });
    await state.close();
    const elsewhere = await getJson(s.url, alice, '/tasks/task-20261126-070000');
    expect(elsewhere.status).toBe(421);
    expect(elsewhere.json.error).toMatchObject({ code: 'task_elsewhere', host: 'build-elsewhere' });
    expect(elsewhere.json.error.message).toMatch(/on the server at build-elsewhere/);
    expect((await getJson(s.url, bob, '/tasks/task-20261126-070000')).status).toBe(404);
    expect((await getJson(s.url, alice, '/tasks')).json.tasks.map((t: any) => t.id)).toEqual([id]);

    const cp = await post(s.url, alice, `/tasks/${id}/checkpoint`, { description: 'before approval' });
    expect(cp.status).toBe(200);
    expect(cp.json.result.checkpoint.description).toBe('before approval');

    const approved = await post(s.url, alice, `/tasks/${id}/approve`, { note: 'looks good' });
    expect(approved.status).toBe(202);
    const after = await eventsUntilFinished(s.url, alice, id, events.length);
    expect(after.at(-1)!.data).toMatchObject({ command: 'approve', state: 'completed', exit_code: 0 });
    expect(after.some((e) => e.event === 'output' && String(e.data.text).includes('after approval'))).toBe(true);

    const verify = await atlas(['verify', id], { cwd: repo, env: { ATLAS_HOME: home } });
    expect(verify.code, verify.stderr).toBe(0);
    expect((await post(s.url, alice, `/tasks/${id}/abandon`)).status).toBe(409);
    expect((await post(s.url, alice, `/tasks/${id}/recover`)).json.error.code).toBe('nothing_to_recover');
    expect((await post(s.url, alice, `/tasks/${id}/reject`)).status).toBe(409);
  });

  it('SIGTERM: a running task is checkpointed and interrupted; a restart with --recover continues it to the end', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const repo = repoIn(root, 'slow');
    addSlowTemplate(repo, root);
    const alice = createToken(home, 'alice');
    const flags = [...AGENT_FLAGS, '-c', `server.repos_root=${root}`, '-c', 'server.grace_period=200ms'];
    const s = await startServe(home, [], { flags });
    servers.push(s);
    const created = await post(s.url, alice, '/tasks', { repo: 'slow', template: 'slow', description: 'slow one' });
    const id = created.json.task.id as string;
    const live = readSse(
      await fetch(`${s.url}/tasks/${id}/events`, { headers: auth(alice) }),
      (e) => e.event === 'state' && e.data.to === 'step_running',
    );
    await live;
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    const status = JSON.parse((await atlas(['--json', 'status'], { cwd: repo, env: { ATLAS_HOME: home } })).stdout).tasks.find(
      (t: any) => t.id === id,
    );
    expect(status.activity).toBe('paused');

    const again = await startServe(home, ['--recover'], { flags });
    servers.push(again);
    const events = await eventsUntilFinished(again.url, alice, id);
    const last = events.at(-1)!;
    expect(last.event).toBe('finished');
    expect(last.data).toMatchObject({ command: 'recover', state: 'completed' });
    expect(events.some((e) => e.event === 'checkpoint' && e.data.description === 'server stopping')).toBe(true);
  });

  it('never opens a path outside server.repos_root, and is off without it', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    const outside = repoIn(tempDir('atlas-outside-'), 'other');
    const alice = createToken(home, 'alice');
    const s = await startServe(home, [], { flags: [...AGENT_FLAGS, '-c', `server.repos_root=${root}`] });
    servers.push(s);
    for (const repo of [outside, '../', `${root}/../${outside.split('/').pop()}`, 'missing']) {
      const r = await post(s.url, alice, '/tasks', { repo, template: 'quick', description: 'x' });
      expect(r.status, repo).toBe(400);
      expect(r.json.error.field).toBe('repo');
    }
    expect((await post(s.url, alice, '/tasks', { repo: 'x', template: '../t' })).json.error.field).toBe('template');
    expect((await post(s.url, alice, '/tasks', { template: 'quick' })).json.error.field).toBe('repo');
    repoIn(root, 'plain');
    const unknown = await post(s.url, alice, '/tasks', { repo: 'plain', template: 'nope', description: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toContain('nope');

    const home2 = tempDir();
    const token2 = createToken(home2, 'alice');
    const off = await startServe(home2);
    servers.push(off);
    expect((await post(off.url, token2, '/tasks', { repo: 'plain', template: 'quick' })).status).toBe(403);
  });
});

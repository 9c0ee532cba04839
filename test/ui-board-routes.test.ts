// The board's own reads and the task API's board additions (issue 38), over real HTTP against a
// real task: the diagnosis of a waiting task (its prompt), an artifact as text and only from the
// task's artifacts folder (no "..", no link out), the repositories and cards, `mode` on POST /tasks
// (a caller may not loosen the sandbox), and retry only for a task that waits.
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, createToken, getJson, readSse, repoIn } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';
import { boardServers } from './helpers/ui-fixtures.js';

checkResponses();
const boards = boardServers();

describe("the board's reads", () => {
  it("answers a waiting task's prompt, its artifacts as text from its own folder only, the repositories and the cards", async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    mkdirSync(join(root, 'not-a-repo'));
    const alice = createToken(home, 'alice');
    const { url } = await boards.start(home, { config: agentConfig((c) => (c.server.repos_root = root)) });
    const created = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'quick', description: 'wait here', mode: 'local' }),
    });
    expect(created.status).toBe(202);
    const id = ((await created.json()) as any).task.id as string;
    await readSse(await fetch(`${url}/tasks/${id}/events`, { headers: auth(alice) }), (e) => e.event === 'finished');

    const diagnosis = await getJson(url, alice, `/tasks/${id}/diagnosis`);
    expect(diagnosis.json).toEqual({ task_id: id, recovery: null, failure: null, prompt: 'Ship it?' });
    const retry = await fetch(`${url}/tasks/${id}/retry`, { method: 'POST', headers: auth(alice), body: '{}' });
    // Waiting for an approval: `atlas resume --no-interactive` without an answer leaves it waiting.
    expect(retry.status).toBe(202);

    const hook = (await getJson(url, alice, `/tasks/${id}`)).json.hook;
    const artifact = hook.receipts[0].stdout_artifact as string;
    const ok = await fetch(`${url}/tasks/${id}/artifact?path=${encodeURIComponent(artifact)}`, { headers: auth(alice) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(ok.headers.get('content-security-policy')).toContain('sandbox');
    for (const bad of ['../task.json', 'artifacts/../task.json', '/etc/passwd', 'artifacts/x', 'hook.json']) {
      expect((await fetch(`${url}/tasks/${id}/artifact?path=${encodeURIComponent(bad)}`, { headers: auth(alice) })).status, bad).toBe(400);
    }
    expect((await fetch(`${url}/tasks/${id}/artifact?path=artifacts/validate/nothing.log`, { headers: auth(alice) })).status).toBe(404);
    // A link the task's steps left in its artifacts folder is not followed.
    const workspace = readdirSync(join(home, 'workspaces')).find((w) => readdirSync(join(home, 'workspaces', w, 'tasks')).includes(id))!;
    symlinkSync('/etc/hostname', join(home, 'workspaces', workspace, 'tasks', id, 'artifacts', 'validate', 'link.log'));
    expect((await fetch(`${url}/tasks/${id}/artifact?path=artifacts/validate/link.log`, { headers: auth(alice) })).status).toBe(404);
    // Another account cannot read it.
    const bob = createToken(home, 'bob');
    expect((await fetch(`${url}/tasks/${id}/artifact?path=${encodeURIComponent(artifact)}`, { headers: auth(bob) })).status).toBe(404);

    const repos = (await getJson(url, alice, '/board/repos')).json;
    expect(repos.repos.map((r: { name: string }) => r.name)).toEqual(['demo']);
    expect(repos.repos[0].templates).toContain('quick');
    expect(repos.modes).toEqual(['sandbox', 'local']);
    const cards = (await getJson(url, alice, '/board/cards')).json.cards;
    expect(cards).toEqual([{ id, step_started_at: expect.any(String), last_line: expect.any(String) }]);
    expect((await getJson(url, bob, '/board/cards')).json.cards).toEqual([]);
  }, 120_000);

  it('says how to start tasks when there is no server.repos_root, refuses local on a sandboxed server and a bad mode, and retry of an unknown task', async () => {
    const home = tempDir();
    const alice = createToken(home, 'alice');
    const bare = await boards.start(home);
    expect((await getJson(bare.url, alice, '/board/repos')).json).toMatchObject({
      repos: [],
      hint: expect.stringContaining('server.repos_root'),
    });

    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    const sandboxed = await boards.start(home, {
      local: false,
      config: agentConfig((c) => ((c.server.repos_root = root), (c.execution.mode = 'sandbox'))),
    });
    const refused = await fetch(`${sandboxed.url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'quick', mode: 'local' }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toMatchObject({ code: 'local_refused', field: 'mode' });
    expect((await getJson(sandboxed.url, alice, '/board/repos')).json.modes).toEqual(['sandbox']);
    const wrong = await fetch(`${sandboxed.url}/tasks`, {
      method: 'POST',
      headers: auth(alice),
      body: JSON.stringify({ repo: 'demo', template: 'quick', mode: 'elsewhere' }),
    });
    expect(wrong.status).toBe(400);
    expect(
      (await fetch(`${sandboxed.url}/tasks/task-20260101-000000/retry`, { method: 'POST', headers: auth(alice), body: '{}' })).status,
    ).toBe(404);
  }, 120_000);
});

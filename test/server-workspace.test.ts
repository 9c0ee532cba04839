// The workspace over the API and the account-wide event stream: files of a conversation's
// workspace (traversal, `.git` and symbolic links refused), a task's files and its diff against
// the base commit, and GET /events carrying every conversation's and task's events with their
// own ids, resumable with Last-Event-ID.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { pathParts } from '../src/server/tasks/workspace-files.js';
import { tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, getJson, prompt, readSse, repoIn } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();
beforeAll(() => ensureBuilt());

describe('workspace files', () => {
  it('lists folders and serves files of a conversation; refuses .., absolute paths, .git and symbolic links', async () => {
    const home = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.txt'), 'secret\n');
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home);
    expect((await prompt(url, token, 'c1', { prompt: 'hello' })).status).toBe(200);
    const ws = join(home, 'server', 'accounts', 'alice', 'conversations', 'c1', 'workspace');
    mkdirSync(join(ws, 'sub'));
    writeFileSync(join(ws, 'sub', 'a.txt'), 'A\n');
    symlinkSync(outside, join(ws, 'link'));
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'sub', 'leak.txt'));
    const root = await getJson(url, token, '/conversations/c1/files');
    expect(root.json.entries).toEqual(
      expect.arrayContaining([
        { name: 'notes.txt', type: 'file', size: 6 },
        { name: 'sub', type: 'dir' },
        { name: 'link', type: 'symlink' },
      ]),
    );
    const file = await fetch(`${url}/conversations/c1/files?path=sub/a.txt`, { headers: auth(token) });
    expect(file.headers.get('content-type')).toBe('application/octet-stream');
    expect(await file.text()).toBe('A\n');
    for (const [path, status] of [
      ['../../../../tokens.json', 400],
      ['/etc/passwd', 400],
      ['link/secret.txt', 403],
      ['sub/leak.txt', 403],
      ['.git/config', 403],
      ['nope.txt', 404],
      ['a\\b', 400],
    ] as const) {
      const r = await getJson(url, token, `/conversations/c1/files?path=${encodeURIComponent(path)}`);
      expect(r.status, path).toBe(status);
      expect(JSON.stringify(r.json)).not.toContain('secret');
    }
    writeFileSync(join(ws, 'big.bin'), Buffer.alloc(10 * 1024 * 1024 + 1));
    const big = await getJson(url, token, '/conversations/c1/files?path=big.bin');
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe('file_too_large');
    expect((await getJson(url, token, '/conversations/c1/files?path=sub')).json).toEqual({
      path: 'sub',
      entries: [
        { name: 'a.txt', type: 'file', size: 2 },
        { name: 'leak.txt', type: 'symlink' },
      ],
    });
    expect((await getJson(url, token, '/conversations/none/files')).status).toBe(404);
    const bob = (await createToken(home, 'bob')).token;
    expect((await getJson(url, bob, '/conversations/c1/files')).status).toBe(404);
    expect(pathParts('./a//b/')).toEqual(['a', 'b']);
  });

  it('a task: its worktree files, its diff against the base commit, and account events across conversations and tasks', async () => {
    const home = tempDir();
    const repos = tempDir('atlas-repos-');
    repoIn(repos, 'demo');
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(
      home,
      agentConfig((c) => (c.server.repos_root = repos)),
    );
    // A dashboard follows the account's stream from the start.
    const abort = new AbortController();
    const dashboard = fetch(`${url}/events`, { headers: auth(token), signal: abort.signal }).then((r) =>
      readSse(r, (e) => e.event === 'finished', abort),
    );
    const created = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ repo: join(repos, 'demo'), template: 'quick', description: 'diff me' }),
    });
    expect(created.status).toBe(202);
    const id = ((await created.json()) as any).task.id as string;
    await readSse(await fetch(`${url}/tasks/${id}/events`, { headers: auth(token) }));
    const seen = await dashboard;
    expect(seen.some((e) => e.data.source?.kind === 'task' && e.data.source.id === id)).toBe(true);
    expect(seen.map((e) => Number(e.id))).toEqual(seen.map((_e, i) => i + 1));
    const detail = await getJson(url, token, `/tasks/${id}`);
    const worktree = detail.json.task.worktree as string;
    writeFileSync(join(worktree, 'README.md'), '# demo, changed\n');
    writeFileSync(join(worktree, 'new.txt'), 'new\n');
    const diff = await getJson(url, token, `/tasks/${id}/diff`);
    expect(diff.status).toBe(200);
    expect(diff.json.diff).toContain('+# demo, changed');
    expect(diff.json.untracked).toContain('new.txt');
    expect(diff.json.base).toMatch(/^[0-9a-f]{40}$/);
    const listing = await getJson(url, token, `/tasks/${id}/files`);
    expect(listing.json.entries.map((e: any) => e.name)).toEqual(expect.arrayContaining(['README.md', 'new.txt']));
    expect(await (await fetch(`${url}/tasks/${id}/files?path=README.md`, { headers: auth(token) })).text()).toBe('# demo, changed\n');
    // A conversation's events join the same stream, after the task's, resumable from there.
    expect((await prompt(url, token, 'c9', { prompt: 'hi' })).status).toBe(200);
    const page = await fetch(`${url}/events?last_event_id=${seen.length}`, { headers: auth(token, { accept: 'application/json' }) });
    const rest: any = await page.json();
    expect(rest.events[0].id).toBe(seen.length + 1);
    expect(rest.events.every((e: any) => e.data.source.kind === 'conversation' && e.data.source.id === 'c9')).toBe(true);
    expect(rest.events.at(-1).type).toBe('usage');
    // Another account's stream has none of it.
    const bob = (await createToken(home, 'bob')).token;
    const other: any = await (await fetch(`${url}/events`, { headers: auth(bob, { accept: 'application/json' }) })).json();
    expect(other.events).toEqual([]);
  }, 60_000);
});

// The board shows a task "waiting for a person" as soon as its hook says so, while the command that
// brought it there is still ending (HOOK.md, its exit). An approval in that moment waits for the end
// instead of answering 409 (CI saw the 409 on a busy machine). The command is kept alive past atlas's
// own exit by a wrapper that the test releases.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { ATLAS_BIN, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { auth, getJson, readSse, repoIn, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

const serve = inProcessServers();
const released: string[] = [];
beforeAll(() => ensureBuilt());
afterEach(() => {
  // A failed assertion must not leave a wrapper waiting (and the server's stop with it).
  for (const r of released.splice(0)) writeFileSync(r, '');
});

/** Runs atlas, writes `<dir>/exited` when it ends, then lingers until `<dir>/release` exists. */
function lingeringAtlas(dir: string): string {
  const path = join(dir, 'linger.mjs');
  writeFileSync(
    path,
    `import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
const r = spawnSync(process.execPath, process.argv.slice(2), { stdio: 'inherit' });
writeFileSync(${JSON.stringify(join(dir, 'exited'))}, '');
const t = setInterval(() => existsSync(${JSON.stringify(join(dir, 'release'))}) && (clearInterval(t), process.exit(r.status ?? 1)), 20);
`,
  );
  return path;
}

async function post(url: string, token: string, path: string) {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: auth(token), body: '{}' });
  return { status: res.status, json: (await res.json()) as any };
}

describe('an action on a task whose command is ending', () => {
  it('waits for the command to end, then runs (202, not 409); the task completes', async () => {
    const home = tempDir();
    const root = tempDir('atlas-repos-');
    repoIn(root, 'demo');
    const wrap = tempDir('atlas-linger-');
    released.push(join(wrap, 'release'));
    const config = agentConfig((c) => {
      c.server.repos_root = root;
    });
    const { server } = await serve(home, config, { command: process.execPath, args: [lingeringAtlas(wrap), ATLAS_BIN] });
    const { token } = await createToken(home, 'alice');
    const res = await fetch(`${server.url}/tasks`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ repo: 'demo', template: 'quick' }),
    });
    const id = ((await res.json()) as any).task.id as string;
    // atlas itself is done and the task waits for a person; its command has not ended yet.
    await waitUntil(() => existsSync(join(wrap, 'exited')), 60_000, 'atlas start to end');
    const task = await getJson(server.url, token, `/tasks/${id}`);
    expect(task.json.task.activity).toBe('waiting');

    const approval = post(server.url, token, `/tasks/${id}/approve`);
    // The answer waits for the command's end (the wrapper ends only once released).
    const early = await Promise.race([approval.then(() => 'answered'), new Promise((ok) => setTimeout(ok, 500, 'waiting'))]);
    expect(early).toBe('waiting');
    writeFileSync(join(wrap, 'release'), '');
    const answer = await approval;
    expect(answer.status, JSON.stringify(answer.json)).toBe(202);
    const events = await readSse(
      await fetch(`${server.url}/tasks/${id}/events`, { headers: auth(token) }),
      (e) => e.event === 'finished' && e.data.command === 'approve',
    );
    expect(events.filter((e) => e.event === 'finished').map((e) => e.data.command)).toEqual(['start', 'approve']);
    expect(events.at(-1)!.data.state).toBe('completed');
  });
});

// `atlas ui`: the built CLI serves this machine's tasks on 127.0.0.1; the printed link signs in
// once (then it is spent); a task started in a terminal is on the `local` account's board.
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { adoptLocalTasks, startLocalBoard } from '../src/server/local-board.js';
import { ATLAS_BIN, atlas, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { readSse, repoIn, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig } from './helpers/server-inprocess-fixtures.js';

/** `atlas ui`'s board in this process, on this machine's tasks. */
function localBoard(home: string, warn: (w: string) => void = () => undefined) {
  return startLocalBoard({
    home,
    config: agentConfig(),
    port: 0,
    version: 'test',
    atlasCommand: { command: process.execPath, args: [ATLAS_BIN] },
    warn,
  });
}

describe('atlas ui', () => {
  it('prints a one-time link on 127.0.0.1 that becomes the cookie; lists the tasks started in a terminal', async () => {
    ensureBuilt();
    const home = tempDir();
    const repo = repoIn(tempDir('atlas-repos-'), 'demo');
    const started = await atlas(['--json', 'start', 'quick', 'terminal task', '--no-interactive'], {
      cwd: repo,
      env: { ATLAS_HOME: home },
    });
    // It stops at its human step, waiting for a person: the board is where one approves it.
    expect(started.stderr).not.toMatch(/error/i);
    const child = spawn(process.execPath, [ATLAS_BIN, 'ui', '--port', '0'], {
      env: { ...process.env, ATLAS_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const link = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no link printed: ${out}`)), 30_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /(http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[\w-]+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
      });
      const base = new URL(link).origin;
      expect((await fetch(`${base}/tasks`)).status).toBe(401);
      const login = await fetch(link, { redirect: 'manual' });
      expect(login.status).toBe(303);
      const cookie = login.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      expect((await fetch(link, { redirect: 'manual' })).status).toBe(401);
      const tasks: any = await (await fetch(`${base}/tasks`, { headers: { cookie } })).json();
      expect(tasks.tasks.map((t: any) => t.description)).toContain('terminal task');
      expect((await fetch(`${base}/`)).headers.get('content-security-policy')).toContain("script-src 'self'");
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    // Already adopted: nothing new the second time.
    expect(adoptLocalTasks(home)).toBe(0);
  }, 120_000);

  it("in process: adopts the terminal's tasks for `local` once, keeps the operator's notes to itself, and signs in by the link", async () => {
    ensureBuilt();
    const home = tempDir();
    const repo = repoIn(tempDir('atlas-repos-'), 'demo');
    await atlas(['--json', 'start', 'quick', 'in-process', '--no-interactive'], { cwd: repo, env: { ATLAS_HOME: home } });
    const warnings: string[] = [];
    const board = await localBoard(home, (w) => warnings.push(w));
    try {
      expect(board.adopted).toBe(1);
      expect(board.link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[\w-]{32}$/);
      expect(warnings.filter((w) => w.startsWith('--local'))).toEqual([]);
      const login = await fetch(board.link, { redirect: 'manual' });
      const cookie = login.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const page: any = await (await fetch(`${new URL(board.link).origin}/tasks`, { headers: { cookie } })).json();
      expect(page.tasks.map((t: any) => t.description)).toEqual(['in-process']);
    } finally {
      await board.server.stop('test over');
    }
  }, 120_000);

  it('a terminal task that ran between two looks of the board (started and at rest unseen) still gets its output and its finished event', async () => {
    ensureBuilt();
    const home = tempDir();
    const repo = repoIn(tempDir('atlas-repos-'), 'demo');
    // One task first, so the workspace (and the board's watch on it) exists.
    await atlas(['start', 'quick', 'first', '--no-interactive'], { cwd: repo, env: { ATLAS_HOME: home } });
    const board = await localBoard(home);
    try {
      // spawnSync holds this process (and the board in it) until the task waits for a person.
      const run = spawnSync(process.execPath, [ATLAS_BIN, 'start', 'quick', 'unseen', '--no-interactive'], {
        cwd: repo,
        env: { ...process.env, ATLAS_HOME: home },
      });
      expect(run.status, String(run.stderr)).toBe(5);
      const cookie = (await fetch(board.link, { redirect: 'manual' })).headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const origin = new URL(board.link).origin;
      const id = await waitUntil(async () => {
        const page: any = await (await fetch(`${origin}/tasks`, { headers: { cookie } })).json();
        return page.tasks.find((t: any) => t.description === 'unseen')?.id as string | undefined;
      });
      const events = await readSse(await fetch(`${origin}/tasks/${id}/events`, { headers: { cookie } }), (e) => e.event === 'finished');
      expect(events.at(-1)!.data).toMatchObject({ command: 'terminal', state: 'awaiting_human' });
      // Its step's output was never in a hook.json the board read (current_step goes when the step
      // ends): the step_complete event kept its tail, and the board streams it, once, before the end.
      const output = events.filter((e) => e.event === 'output').map((e) => (e.data as { text: string }).text);
      expect(output).toEqual(['hello-from-task']);
      expect(events.findIndex((e) => e.event === 'output')).toBeLessThan(events.findIndex((e) => e.event === 'finished'));
    } finally {
      await board.server.stop('test over');
    }
  }, 120_000);

  it('refuses a bad --port with exit 2', async () => {
    ensureBuilt();
    const r = await atlas(['ui', '--port', 'x'], { env: { ATLAS_HOME: tempDir() } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--port expects 0..65535');
  });
});

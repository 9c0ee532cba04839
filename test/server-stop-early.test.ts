// A SIGTERM or Ctrl+C that comes while `atlas serve` starts (an orchestrator's rolling restart, a
// person who changed their mind) stops it gracefully like one that comes later: exit 0, its process
// spawner stopped and its socket folder removed. Before, the signal handlers were installed only
// once the start-up returned, and a signal before that (or just after the "listening" line) ended
// the process by the signal itself, leaving the spawner's folder behind.
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATLAS_BIN, REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { AGENT_FLAGS, createToken, getJson, prompt, waitUntil } from './helpers/server-fixtures.js';

const made: string[] = [];
beforeAll(() => ensureBuilt());
/** Servers started in a process group of their own: stopped whole even after a test timed out. */
const groups: number[] = [];
function stopGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Ended.
  }
}
afterAll(() => {
  for (const pid of groups) stopGroup(pid);
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts `atlas serve --local --port 0` with a TMPDIR of its own, sends `signal` once `when` is seen
 * (on stderr: the start-up's warning, printed before it listens; on stdout: the listening line),
 * and gives how it ended and what it left in its TMPDIR.
 */
async function stopWhen(when: 'starting' | 'listening', signal: NodeJS.Signals) {
  const home = tempDir('atlas-stop-early-home-');
  const tmp = tempDir('atlas-stop-early-tmp-');
  made.push(home, tmp);
  const child = spawn(process.execPath, [ATLAS_BIN, ...AGENT_FLAGS, 'serve', '--port', '0', '--local'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ATLAS_HOME: home, TMPDIR: tmp },
  });
  let out = '';
  let err = '';
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, sig) => resolve({ code, signal: sig })),
  );
  let sent = false;
  const watch = () => {
    const seen = when === 'starting' ? /UNSANDBOXED/.test(err) : /"msg":"listening"/.test(out);
    if (seen && !sent) {
      sent = true;
      child.kill(signal);
    }
  };
  child.stdout.on('data', (d) => {
    out += d;
    watch();
  });
  child.stderr.on('data', (d) => {
    err += d;
    watch();
  });
  const end = await ended;
  return { ...end, sent, out, err, left: readdirSync(tmp).filter((n) => n.startsWith('atlas-spawner-')) };
}

describe('a stop that comes while the server starts', () => {
  it('SIGTERM before it listens: it starts, then stops gracefully (exit 0), and leaves no spawner folder', async () => {
    const r = await stopWhen('starting', 'SIGTERM');
    expect(r.sent).toBe(true);
    expect(r, r.err).toMatchObject({ code: 0, signal: null, left: [] });
    expect(r.out).toMatch(/"msg":"stopped"|"msg":"stopping"/);
  });

  it('SIGTERM or Ctrl+C the moment it says it listens: the same, every time', async () => {
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGTERM'] as const) {
      const r = await stopWhen('listening', signal);
      expect(r.sent).toBe(true);
      expect(r, r.err).toMatchObject({ code: 0, signal: null, left: [] });
    }
  });
});

describe('Ctrl+C in the terminal that runs the server', () => {
  it('reaches its whole process group, and a running turn still ends within the grace period, its agent not killed', async () => {
    const home = tempDir('atlas-ctrl-c-home-');
    made.push(home);
    const token = createToken(home, 'alice');
    // Its own process group, as a shell gives a foreground job: Ctrl+C is SIGINT to every process in it.
    const child = spawn(process.execPath, [ATLAS_BIN, ...AGENT_FLAGS, 'serve', '--port', '0', '--local'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ATLAS_HOME: home },
      detached: true,
    });
    groups.push(child.pid!);
    let out = '';
    const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve) =>
        child.stdout.on('data', (d) => {
          out += d;
          const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
          if (m) resolve(m[1]!);
        }),
      );
      const turn = prompt(url, token, 'c1', { prompt: 'sleep:1500 finish this' });
      // Once its agent is at work (its turn recorded running), the whole group gets SIGINT.
      await waitUntil(
        async () => {
          const r = await getJson(url, token, '/conversations/c1');
          return r.status === 200 && r.json.conversation.status === 'running' ? true : undefined;
        },
        20_000,
        'the turn to run',
      );
      process.kill(-child.pid!, 'SIGINT');
      const answer = await turn;
      expect(answer.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
      expect(await ended).toBe(0);
      // The spawner ignored the terminal's SIGINT: it was not restarted, and nothing was reported.
      expect(out).not.toContain('process spawner');
    } finally {
      stopGroup(child.pid!);
    }
  });
});

// A conversation runs at most one turn at a time across servers sharing one ATLAS_HOME (issue 19):
// owner.json is a lease claimed under a lock, so of two servers asked at the same moment one runs
// the turn and the other answers 409; a server restarted with --recover beside a live one leaves
// that one's turn alone.
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { AGENT_FLAGS, auth, createToken, getJson, readSse, serversOfThisFile, startServe, waitUntil } from './helpers/server-fixtures.js';

checkResponses();

const servers = serversOfThisFile();

async function serve(home: string, args: string[] = []): Promise<ServeProcess> {
  const s = await startServe(home, args, { flags: AGENT_FLAGS });
  servers.push(s);
  return s;
}

describe('one turn at a time across servers', () => {
  it('two servers asked for the same conversation at once: one runs the turn, the other answers 409', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const [a, b] = await Promise.all([serve(home), serve(home)]);
    // A first turn makes the conversation; then both servers are asked for the next one together.
    const first = await fetch(`${a.url}/conversations/shared/sandbox/sb`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'hello' }),
    });
    expect((await readSse(first)).at(-1)!.data).toMatchObject({ ok: true });
    for (let round = 0; round < 5; round++) {
      const body = JSON.stringify({ prompt: `sleep:1500 round ${round}` });
      const answers = await Promise.all(
        [a, b].map((s) => fetch(`${s.url}/conversations/shared/sandbox/sb`, { method: 'POST', headers: auth(token), body })),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409]);
      const ok = answers.find((r) => r.status === 200)!;
      const refused = answers.find((r) => r.status === 409)!;
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('turn_running');
      // The stream ends with this turn's usage, not the previous turn's (run by the other server).
      expect((await readSse(ok)).at(-1)!.data).toMatchObject({ ok: true, turn: round + 2 });
    }
    const got = await getJson(a.url, token, '/conversations/shared');
    expect(got.json.conversation.turns).toBe(6);
  }, 60_000);

  it('a server started with --recover beside a live one does not take its running turn', async () => {
    const home = tempDir();
    const token = createToken(home, 'alice');
    const a = await serve(home);
    const res = await fetch(`${a.url}/conversations/busy/sandbox/sb`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'sleep:1500 working' }),
    });
    const events = readSse(res);
    await waitUntil(
      async () => ((await getJson(a.url, token, '/conversations/busy')).json.conversation?.status === 'running' ? true : undefined),
      10_000,
      'the turn to run',
    );
    const b = await serve(home, ['--recover']);
    await waitUntil(() => b.lines.some((l) => l.includes('cut-off work checked')) || undefined, 10_000, 'the check for cut-off work');
    expect(b.lines.some((l) => l.includes('interrupted work found'))).toBe(false);
    const second = await fetch(`${b.url}/conversations/busy/sandbox/sb`, {
      method: 'POST',
      headers: auth(token),
      body: JSON.stringify({ prompt: 'another' }),
    });
    expect(second.status).toBe(409);
    expect((await events).at(-1)!.data).toMatchObject({ ok: true });
    expect((await getJson(b.url, token, '/conversations/busy')).json.conversation).toMatchObject({ status: 'completed', turns: 1 });
  }, 60_000);
});

// A returning server must not trust a stale sandbox (issue 19, defect 3): two servers (two
// machines: two ATLAS_HOMEs) share a folder store and take turns on one conversation. The server
// whose sandbox is warm but behind pulls the store's newer version before its turn, so the other
// server's work is neither hidden from the agent nor pushed over.
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { auth, readSse } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();

async function turn(url: string, token: string, prompt: string): Promise<void> {
  const res = await fetch(`${url}/conversations/c1/sandbox/sb`, { method: 'POST', headers: auth(token), body: JSON.stringify({ prompt }) });
  expect(res.status).toBe(200);
  expect((await readSse(res)).at(-1)!.data).toMatchObject({ ok: true });
}

async function notes(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/conversations/c1/files?path=notes.txt`, { headers: auth(token) });
  expect(res.status).toBe(200);
  return res.text();
}

describe('a warm sandbox behind the store', () => {
  it("catches up before its turn: the other server's work is kept and pushed on", async () => {
    const store = tempDir('atlas-shared-store-');
    const config = agentConfig((c) => {
      c.sync.store = store;
      c.sync.init_from_store = true;
      c.server.requests_per_second = 0;
    });
    const [homeA, homeB] = [tempDir(), tempDir()];
    const a = await serve(homeA, config);
    const b = await serve(homeB, config);
    const tokenA = (await createToken(homeA, 'alice')).token;
    const tokenB = (await createToken(homeB, 'alice')).token;
    await turn(a.url, tokenA, 'one'); // A's sandbox is warm from here on
    await turn(b.url, tokenB, 'two'); // B restores A's version, adds to it, pushes (same second, often)
    expect(await notes(b.url, tokenB)).toBe('one\ntwo\n');
    await turn(a.url, tokenA, 'three');
    expect(await notes(a.url, tokenA)).toBe('one\ntwo\nthree\n');
    // The newest version in the store holds all three.
    await turn(b.url, tokenB, 'four');
    expect(await notes(b.url, tokenB)).toBe('one\ntwo\nthree\nfour\n');
  }, 60_000);
});

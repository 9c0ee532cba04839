// `atlas serve` without --local: each conversation turn runs in the OS sandbox (writes only in the
// conversation's workspace and tmp/, keys and other conversations unreadable); and with
// sync.store set, turns push the workspace and a new sandbox restores it (another server too).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { AGENT_FLAGS, createToken, getJson, prompt, serversOfThisFile, startServe } from './helpers/server-fixtures.js';

checkResponses();

/** A command agent that runs its prompt as a shell command (inside the sandbox, like any agent). */
const SHELL_AGENT = ['-c', 'ai.agent=command', '-c', 'ai.command=eval "$ATLAS_PROMPT"'];

const servers = serversOfThisFile();

async function serve(home: string, flags: string[], local: boolean): Promise<ServeProcess> {
  const s = await startServe(home, [], { flags, local });
  servers.push(s);
  return s;
}

function workspace(home: string, account: string, id: string): string {
  return join(home, 'server', 'accounts', account, 'conversations', id, 'workspace');
}

function output(events: { event: string; data: any }[]): string {
  return events
    .filter((e) => e.event === 'output')
    .map((e) => e.data.text)
    .join('\n');
}

describe.skipIf(skipSandbox)('sandboxed conversations', () => {
  it('without --local a turn writes in its workspace and tmp, and cannot read master.key or another conversation, nor write outside', async () => {
    const home = tempDir();
    const secret = randomBytes(16).toString('hex');
    mkdirSync(join(home, 'keys'), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, 'keys', 'master.key'), secret, { mode: 0o600 });
    const alice = createToken(home, 'alice');
    const bob = createToken(home, 'bob');
    const s = await serve(home, SHELL_AGENT, false);
    expect(s.stderr()).not.toContain('UNSANDBOXED');
    const health = await getJson(s.url, alice, '/ready');
    expect(health.json.sandbox).toMatchObject({ ready: true, mode: 'sandbox' });
    expect(s.lines.some((l) => l.includes('"sandbox":"sandbox"') && l.includes('"sandbox_ready":true'))).toBe(true);

    const write = await prompt(s.url, alice, 'a1', {
      prompt: 'echo inside > inside.txt && echo t > "$TMPDIR/t" && cat inside.txt "$TMPDIR/t"',
    });
    expect(write.events.at(-1)!.data).toMatchObject({ ok: true });
    expect(output(write.events)).toContain('inside');
    expect(readFileSync(join(workspace(home, 'alice', 'a1'), 'inside.txt'), 'utf8')).toBe('inside\n');

    const key = await prompt(s.url, alice, 'a1', { prompt: `cat ${join(home, 'keys', 'master.key')}` });
    expect(key.events.at(-1)!.data.ok).toBe(false);
    expect(JSON.stringify(key.events)).not.toContain(secret);

    const outside = join(home, 'outside.txt');
    const escaped = await prompt(s.url, alice, 'a1', { prompt: `echo x > ${outside}` });
    expect(escaped.events.at(-1)!.data.ok).toBe(false);
    expect(existsSync(outside)).toBe(false);

    const tokens = await prompt(s.url, alice, 'a1', { prompt: `cat ${join(home, 'server', 'state.db')}` });
    expect(tokens.events.at(-1)!.data.ok).toBe(false);

    // Bob's conversation cannot read Alice's workspace.
    const peek = await prompt(s.url, bob, 'b1', { prompt: `cat ${join(workspace(home, 'alice', 'a1'), 'inside.txt')}` });
    expect(peek.events.at(-1)!.data.ok).toBe(false);
    expect(output(peek.events)).not.toContain('inside');
    const own = await prompt(s.url, bob, 'b1', { prompt: 'echo mine > mine.txt' });
    expect(own.events.at(-1)!.data.ok).toBe(true);
    expect(existsSync(join(workspace(home, 'bob', 'b1'), 'mine.txt'))).toBe(true);
  });
});

describe('conversation workspaces through the store', () => {
  it('each turn pushes the workspace; a second server with the same store restores it on its cold start', async () => {
    const store = tempDir();
    const flags = [...AGENT_FLAGS, '-c', `sync.store=${store}`, '-c', 'sync.init_from_store=true'];
    const homeA = tempDir();
    const a = await serve(homeA, flags, true);
    const tokenA = createToken(homeA, 'alice');
    const first = await prompt(a.url, tokenA, 'c1', { prompt: 'first words' });
    expect(first.events.at(-1)!.data.ok).toBe(true);
    expect(readdirSync(store)).toContain('conv.alice.c1');

    const homeB = tempDir();
    const b = await serve(homeB, flags, true);
    const tokenB = createToken(homeB, 'alice');
    const second = await prompt(b.url, tokenB, 'c1', { prompt: 'second words' });
    expect(second.events.at(-1)!.data.ok).toBe(true);
    expect(readFileSync(join(workspace(homeB, 'alice', 'c1'), 'notes.txt'), 'utf8')).toBe('first words\nsecond words\n');

    // Server A, its workspace gone, restores the newest version (pushed by B).
    a.child.kill('SIGKILL');
    await a.exited;
    rmSync(workspace(homeA, 'alice', 'c1'), { recursive: true, force: true });
    const a2 = await serve(homeA, flags, true);
    const third = await prompt(a2.url, tokenA, 'c1', { prompt: 'third words' });
    expect(third.events.at(-1)!.data.ok).toBe(true);
    expect(readFileSync(join(workspace(homeA, 'alice', 'c1'), 'notes.txt'), 'utf8')).toBe('first words\nsecond words\nthird words\n');
  });

  it('without init_from_store a new sandbox starts empty, and pushes still happen', async () => {
    const store = tempDir();
    const homeA = tempDir();
    const flags = [...AGENT_FLAGS, '-c', `sync.store=${store}`];
    const a = await serve(homeA, flags, true);
    const token = createToken(homeA, 'alice');
    expect((await prompt(a.url, token, 'c2', { prompt: 'one' })).events.at(-1)!.data.ok).toBe(true);
    const homeB = tempDir();
    const b = await serve(homeB, flags, true);
    expect((await prompt(b.url, createToken(homeB, 'alice'), 'c2', { prompt: 'two' })).events.at(-1)!.data.ok).toBe(true);
    expect(readFileSync(join(workspace(homeB, 'alice', 'c2'), 'notes.txt'), 'utf8')).toBe('two\n');
    expect(readdirSync(store)).toContain('conv.alice.c2');
  });
});

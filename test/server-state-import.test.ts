// `atlas serve migrate`: a home made by a real `atlas serve` (turns, a removed conversation, two
// accounts) is imported into SQLite and into a real PostgreSQL; nothing is lost, a second run adds
// nothing, and the files stay as they were.

import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTokens } from '../src/server/accounts/tokens.js';
import { openServerState } from '../src/server/cluster/server-state.js';
import type { ImportReport } from '../src/server/cluster/state-import.js';
import { importFileState, importMarker } from '../src/server/cluster/state-import.js';
import { conversationFiles, listConversationFiles } from '../src/server/conversations/conversation-store.js';
import { readMessages } from '../src/server/conversations/lifecycle-adapter.js';
import { parseLines } from '../src/server/state/event-log-file.js';
import { openState } from '../src/server/state/open.js';
import { logKey } from '../src/server/state/types.js';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';
import { auth, createToken, prompt, serversOfThisFile, startServe } from './helpers/server-fixtures.js';

const servers = serversOfThisFile('SIGTERM');
let pgServer: TestPostgres | undefined;
let home: string;

/** Every file under the server folder but the state database, with its hash. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (!name.startsWith('state.db')) out[relative(dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  if (!postgresSkipReason) pgServer = await startPostgres();
  home = tempDir();
  const alice = createToken(home, 'alice');
  const bob = createToken(home, 'bob');
  const s = await startServe(home);
  servers.push(s);
  expect((await prompt(s.url, alice, 'first', { prompt: 'hello' })).status).toBe(200);
  expect((await prompt(s.url, alice, 'first', { prompt: 'again' })).status).toBe(200);
  expect((await prompt(s.url, alice, 'gone', { prompt: 'short-lived' })).status).toBe(200);
  expect((await fetch(`${s.url}/conversations/gone`, { method: 'DELETE', headers: auth(alice) })).status).toBe(200);
  expect((await prompt(s.url, bob, 'first', { prompt: 'bob too' })).status).toBe(200);
  s.child.kill('SIGTERM');
  await s.exited;
  // As an older atlas left its home: tokens in tokens.json, each record in its conversation.json.
  const state = await openState({ home, url: '' });
  const tokens = await state.allTokens();
  const records = [...(await state.listConversations('alice')), ...(await state.listConversations('bob'))];
  // Each log as its events.jsonl; a removed conversation's last id in .retired-event-ids.
  for (const { log, last_id } of await state.logs()) {
    const events = await state.eventsAfter(log, 0);
    const [kind, rest] = [log.slice(0, log.indexOf(':')), log.slice(log.indexOf(':') + 1)];
    const [account, id] = rest.split('/') as [string, string | undefined];
    const base = join(home, 'server', 'accounts', account);
    if (kind === 'account') writeFileSync(join(base, 'events.jsonl'), events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    else if (events.length > 0)
      writeFileSync(join(base, 'conversations', id!, 'events.jsonl'), events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    else {
      mkdirSync(join(base, 'conversations', '.retired-event-ids'), { recursive: true });
      writeFileSync(join(base, 'conversations', '.retired-event-ids', id!), `${last_id}\n`);
    }
  }
  await state.close();
  writeFileSync(join(home, 'server', 'tokens.json'), JSON.stringify({ version: 1, tokens: tokens.map(({ revoked_at: _r, ...t }) => t) }));
  for (const c of records) writeFileSync(conversationFiles(home, c.account, c.id).record, JSON.stringify(c));
  for (const f of readdirSync(join(home, 'server')).filter((n) => n.startsWith('state.db'))) rmSync(join(home, 'server', f));
}, 120_000);

afterAll(async () => pgServer?.stop());

/** The home's two accounts, their tokens and live conversations came in with the first import; the second added nothing. */
function expectImportedOnce(first: ImportReport, again: ImportReport): void {
  expect(first).toMatchObject({ tokens: 2, accounts: 2, conversations: 2 });
  expect(first.events).toBeGreaterThan(0);
  expect(first.messages).toBeGreaterThan(0);
  expect(again).toMatchObject({ tokens: 0, accounts: 0, conversations: 0, messages: 0, events: 0, tasks: 0 });
  expect(again.unchanged).toBeGreaterThan(0);
}

const targets = [
  { name: 'the embedded SQLite file', skip: undefined as string | undefined, url: async () => '' },
  { name: 'PostgreSQL', skip: postgresSkipReason, url: async () => pgServer!.createDatabase('imported') },
];

for (const target of targets) {
  describe.skipIf(target.skip !== undefined)(`atlas serve migrate into ${target.name}`, () => {
    it('imports tokens, conversations, messages, event logs once, and keeps the files', async () => {
      const url = await target.url();
      const before = snapshot(join(home, 'server'));
      const env = { ATLAS_HOME: home, ATLAS_DATABASE_URL: url };
      const first = atlasSync(['--json', 'serve', 'migrate'], { env });
      expect(first.code, first.stderr).toBe(0);
      const report = JSON.parse(first.stdout);
      expect(report).toMatchObject({ backend: url ? 'postgres' : 'sqlite' });
      expectImportedOnce(report, JSON.parse(atlasSync(['--json', 'serve', 'migrate'], { env }).stdout));
      expect(snapshot(join(home, 'server'))).toEqual(before);

      const state = await openState({ home, url });
      try {
        expect((await state.listTokens()).map((t) => t.sha256).sort()).toEqual(
          readTokens(home)
            .map((t) => t.sha256)
            .sort(),
        );
        for (const account of ['alice', 'bob']) {
          for (const c of listConversationFiles(home, account)) {
            expect(await state.getConversation(account, c.id)).toEqual(c);
            const files = conversationFiles(home, account, c.id);
            const fileEvents = parseLines(readFileSync(files.events, 'utf8'));
            expect(await state.eventsAfter(logKey.conversation(account, c.id), 0)).toEqual(fileEvents);
            // The next event continues the file's ids.
            expect(await state.lastEventId(logKey.conversation(account, c.id))).toBe(fileEvents.at(-1)!.id);
            const messages = await state.listMessages(account, c.id);
            expect(messages.map((m) => m.body)).toEqual(readMessages(files.dir).map((m) => m.body));
          }
        }
        expect((await state.getConversation('alice', 'first'))?.turns).toBe(2);
        // The removed conversation's ids are not handed out again.
        expect(await state.getConversation('alice', 'gone')).toBeUndefined();
        expect(await state.lastEventId(logKey.conversation('alice', 'gone'))).toBeGreaterThan(0);
        expect((await state.eventsAfter(logKey.account('alice'), 0)).length).toBeGreaterThan(0);
      } finally {
        await state.close();
      }
    }, 60_000);
  });
}

describe('importFileState in this process', () => {
  it('imports a copy of the home into its SQLite state once; a second run adds nothing', async () => {
    const copy = tempDir();
    cpSync(home, copy, { recursive: true });
    // The home as an older atlas left it: no state yet (the migrate tests above made one).
    for (const f of readdirSync(join(copy, 'server')).filter((n) => n.startsWith('state.db'))) rmSync(join(copy, 'server', f));
    const state = await openState({ home: copy, url: '' });
    try {
      expectImportedOnce(await importFileState(copy, state), await importFileState(copy, state));
      expect((await state.listTokens()).map((t) => t.sha256).sort()).toEqual(
        readTokens(copy)
          .map((t) => t.sha256)
          .sort(),
      );
    } finally {
      await state.close();
    }
  }, 60_000);
});

describe('atlas serve on an older home', () => {
  it('adopts its tokens.json, conversation.json records and task index once, and keeps the files', async () => {
    const old = tempDir();
    const token = 'atlas_from-an-older-atlas';
    const sha256 = createHash('sha256').update(token).digest('hex');
    mkdirSync(join(old, 'server'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(old, 'server', 'tokens.json'),
      JSON.stringify({ version: 1, tokens: [{ id: 'tok-old1', account: 'alice', sha256, created_at: '2026-01-01T00:00:00.000Z' }] }),
    );
    const dir = conversationFiles(old, 'alice', 'kept').dir;
    mkdirSync(dir, { recursive: true });
    const stats = {
      messages_exchanged: 2,
      total_input_tokens: 10,
      total_output_tokens: 5,
      total_cache_tokens: 0,
      cache_read_tokens: 0,
      cache_creation_tokens: 0,
      cost_usd: 0.01,
      partial: false,
      models: [],
    };
    const record = {
      id: 'kept',
      account: 'alice',
      agent_id: null,
      provider: 'command',
      sandbox_id: 'sb',
      session_id: 's',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:01.000Z',
      status: 'completed',
      turns: 1,
      last_turn: null,
      stats,
    };
    writeFileSync(join(dir, 'conversation.json'), JSON.stringify(record));
    const task = {
      task_id: 'task-20260101-000000',
      account: 'alice',
      workspace: 'srv-0a0b0c0d0e',
      dir: join(old, 'workspaces', 'srv-0a0b0c0d0e', 'tasks', 'task-20260101-000000'),
      repo: '/r',
      template: 'quick',
      created_at: '2026-01-01T00:00:00.000Z',
    };
    mkdirSync(join(old, 'server', 'tasks'), { recursive: true });
    writeFileSync(join(old, 'server', 'tasks', `${task.task_id}.json`), JSON.stringify(task));
    const before = snapshot(join(old, 'server'));
    const s = await startServe(old, [], { env: { ATLAS_DATABASE_URL: '' } });
    servers.push(s);
    const listed = await fetch(`${s.url}/conversations`, { headers: auth(token) });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { conversations: unknown[] }).conversations).toEqual([record]);
    const state = await openState({ home: old, url: '' });
    // An older home served one machine: its tasks are recorded as on this one.
    expect(await state.getTask(task.task_id)).toEqual({ ...task, host: hostname() });
    await state.close();
    expect(snapshot(join(old, 'server'))).toEqual(before);
  }, 60_000);
});

describe('adopting an older home when the state opens', () => {
  it('happens the first time only (a marker in the state), not on every open nor every `atlas serve token`; migrate still brings in what came later', async () => {
    const old = tempDir();
    const record = (id: string) => ({
      id,
      account: 'alice',
      agent_id: null,
      provider: 'command',
      sandbox_id: null,
      session_id: '',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      status: 'completed',
      turns: 1,
      last_turn: null,
      stats: {
        messages_exchanged: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        total_cache_tokens: 0,
        cache_read_tokens: 0,
        cache_creation_tokens: 0,
        cost_usd: null,
        partial: false,
        models: [],
      },
    });
    const write = (id: string) => {
      mkdirSync(conversationFiles(old, 'alice', id).dir, { recursive: true });
      writeFileSync(conversationFiles(old, 'alice', id).record, JSON.stringify(record(id)));
    };
    write('first');
    // A record it cannot read is left out when the state opens (migrate names it and stops).
    mkdirSync(conversationFiles(old, 'alice', 'damaged').dir, { recursive: true });
    writeFileSync(conversationFiles(old, 'alice', 'damaged').record, JSON.stringify({ ...record('damaged'), stats: undefined }));
    const opened = await openServerState(old);
    try {
      expect((await opened.listConversations('alice')).map((c) => c.id)).toEqual(['first']);
      expect(await opened.hasMarker(importMarker(old))).toBe(true);
    } finally {
      await opened.close();
    }
    // Found after the first open: the next opens (a server, each token command) leave it.
    write('later');
    expect(atlasSync(['serve', 'token', 'list'], { env: { ATLAS_HOME: old, ATLAS_DATABASE_URL: '' } }).code).toBe(0);
    const again = await openServerState(old);
    try {
      expect(await again.getConversation('alice', 'later')).toBeUndefined();
      rmSync(conversationFiles(old, 'alice', 'damaged').dir, { recursive: true });
      expect(await importFileState(old, again)).toMatchObject({ conversations: 1, skipped: 0 });
      expect((await again.listConversations('alice')).map((c) => c.id).sort()).toEqual(['first', 'later']);
    } finally {
      await again.close();
    }
  });
});

describe('atlas serve migrate refuses', () => {
  it('a conversation record it cannot read, naming it, and goes on once it is repaired', () => {
    const damaged = tempDir();
    const dir = join(damaged, 'server', 'accounts', 'alice', 'conversations', 'c1');
    mkdirSync(dir, { recursive: true });
    const record = {
      id: 'c1',
      account: 'alice',
      agent_id: null,
      provider: 'command',
      sandbox_id: null,
      session_id: '',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      status: 'idle',
      turns: 0,
      last_turn: null,
    };
    writeFileSync(join(dir, 'conversation.json'), JSON.stringify(record));
    const refused = atlasSync(['serve', 'migrate'], { env: { ATLAS_HOME: damaged, ATLAS_DATABASE_URL: '' } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`cannot import ${join(dir, 'conversation.json')}: it has no stats`);
    const stats = {
      messages_exchanged: 0,
      total_input_tokens: 0,
      total_output_tokens: null,
      total_cache_tokens: 0,
      cache_read_tokens: 0,
      cache_creation_tokens: 0,
      cost_usd: null,
      partial: true,
      models: [],
    };
    writeFileSync(join(dir, 'conversation.json'), JSON.stringify({ ...record, stats }));
    const fixed = atlasSync(['--json', 'serve', 'migrate'], { env: { ATLAS_HOME: damaged, ATLAS_DATABASE_URL: '' } });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(JSON.parse(fixed.stdout)).toMatchObject({ conversations: 1 });
  });

  it('a database URL that is not PostgreSQL, and says when the database is down, never with the password', () => {
    const wrong = atlasSync(['serve', 'migrate'], { env: { ATLAS_HOME: home, ATLAS_DATABASE_URL: 'mysql://u:pw@h/db' } });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('must be a postgres:// URL');
    expect(wrong.stderr).not.toContain(':pw@');
    const down = atlasSync(['serve', 'migrate'], {
      env: { ATLAS_HOME: home, ATLAS_DATABASE_URL: 'postgres://atlas:hunter2@127.0.0.1:1/atlas' },
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('postgres://atlas:***@127.0.0.1:1/atlas');
    expect(down.stderr + down.stdout).not.toContain('hunter2');
  });
});

// Messages in DynamoDB (server.messages: dynamodb://TABLE) against moto's DynamoDB, the rest of the
// state in SQLite or a real PostgreSQL: batched writes, pages, turn by turn order, a turn put again
// replacing its items, removal, a DynamoDB that does not answer, and a real `atlas serve`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDynamoUrl } from '../src/server/state/dynamo-messages.js';
import { openState, stateFilePath } from '../src/server/state/open.js';
import type { StoredMessage } from '../src/server/state/types.js';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import type { TestMoto } from './helpers/moto.js';
import { MOTO_ENV, motoMissing, startMotoServer } from './helpers/moto.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';
import { AGENT_FLAGS, getJson, prompt, serversOfThisFile, startServe } from './helpers/server-fixtures.js';

const motoSkipReason = motoMissing();

const servers = serversOfThisFile('SIGTERM');
let moto: TestMoto | undefined;
let pgServer: TestPostgres | undefined;
const homes: string[] = [];

beforeAll(async () => {
  if (motoSkipReason) return;
  Object.assign(process.env, MOTO_ENV);
  moto = await startMotoServer();
  if (!postgresSkipReason) pgServer = await startPostgres();
}, 120_000);

afterAll(async () => {
  await moto?.stop();
  await pgServer?.stop();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

function home(): string {
  const h = mkdtempSync(join(tmpdir(), 'atlas-dynamo-'));
  homes.push(h);
  return h;
}

const message = (conversation: string, key: string, turn: number): StoredMessage => ({
  account: 'alice',
  conversation_id: conversation,
  key,
  turn,
  role: 2,
  body: `body of ${key}`,
  timestamp: 1_700_000_000,
  tokens: 3,
  tool_calls: [{ id: `t-${key}`, type: 'tool_use', name: 'Bash', input: { command: 'ls' }, output: 'a', status: 'success', error: '' }],
});

describe('the dynamodb:// URL', () => {
  it('names the table, the endpoint, the region and the deadline of each attempt (5 s unless timeout= says otherwise)', () => {
    expect(parseDynamoUrl('dynamodb://atlas-messages')).toEqual({
      table: 'atlas-messages',
      endpoint: undefined,
      region: undefined,
      timeoutMs: 5000,
    });
    expect(parseDynamoUrl('dynamodb://t.x_1?endpoint=http://127.0.0.1:4566&region=eu-west-1&timeout=1500ms')).toEqual({
      table: 't.x_1',
      endpoint: 'http://127.0.0.1:4566',
      region: 'eu-west-1',
      timeoutMs: 1500,
    });
    expect(parseDynamoUrl('dynamodb://t1x?timeout=2m')?.timeoutMs).toBe(120_000);
    for (const bad of [
      'dynamodb://t1x?timeout=50ms',
      'dynamodb://t1x?timeout=3m',
      'dynamodb://t1x?timeout=5',
      'dynamodb://ab',
      's3://t1x',
    ]) {
      expect(parseDynamoUrl(bad), bad).toBeUndefined();
    }
  });
});

describe.skipIf(motoSkipReason !== undefined)(`messages in DynamoDB${motoSkipReason ? ` (skipped: ${motoSkipReason})` : ''}`, () => {
  it('writes in batches, reads page by page turn by turn, replaces a turn put again, removes a conversation; nothing in SQL', async () => {
    const h = home();
    const state = await openState({ home: h, url: '', messages: `dynamodb://atlas-messages?endpoint=${moto!.url}` });
    try {
      const turn1 = Array.from({ length: 1_200 }, (_, i) => message('big', `r1:k${i}`, 1));
      const turn2 = Array.from({ length: 30 }, (_, i) => message('big', `r2:k${i}`, 2));
      await state.putMessages(turn1);
      await state.putMessages(turn2);
      const all = await state.listMessages('alice', 'big');
      expect(all.map((m) => m.key)).toEqual([...turn1, ...turn2].map((m) => m.key));
      expect(all[0]).toEqual(turn1[0]);
      expect((await state.listMessages('alice', 'big', { turn: 2 })).map((m) => m.key)).toEqual(turn2.map((m) => m.key));
      expect((await state.listMessages('alice', 'big', { limit: 3 })).map((m) => m.key)).toEqual(['r1:k0', 'r1:k1', 'r1:k2']);
      // The same turn put again (a run's messages, whole): the same items, replaced.
      await state.putMessages(turn2.map((m) => ({ ...m, body: 'again' })));
      const again = await state.listMessages('alice', 'big', { turn: 2 });
      expect(again).toHaveLength(30);
      expect(again.every((m) => m.body === 'again')).toBe(true);
      await state.removeConversation('alice', 'big');
      expect(await state.listMessages('alice', 'big')).toEqual([]);
    } finally {
      await state.close();
    }
    const raw = new Database(stateFilePath(h), { readonly: true });
    expect(raw.prepare('select count(*) as n from messages').get()).toEqual({ n: 0 });
    raw.close();
  }, 60_000);

  it('says which table it cannot reach', async () => {
    const error = await openState({ home: home(), url: '', messages: 'dynamodb://atlas-messages?endpoint=http://127.0.0.1:1' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/cannot reach DynamoDB table atlas-messages/);
    await expect(openState({ home: home(), url: '', messages: 'dynamodb://x' })).rejects.toThrow(/must be dynamodb:\/\/TABLE/);
    await expect(openState({ home: home(), url: '', messages: 'dynamodb://atlas-messages?timeout=soon' })).rejects.toThrow(
      /must be dynamodb:\/\/TABLE\[\?endpoint=URL&region=NAME&timeout=DURATION\] \(timeout from 100ms to 2m\)/,
    );
  }, 60_000);

  it.skipIf(postgresSkipReason !== undefined)(
    "atlas serve on PostgreSQL keeps a turn's messages in DynamoDB and answers GET …/messages from there",
    async () => {
      const url = await pgServer!.createDatabase('dynamo');
      const h = tempDir();
      const env = { ATLAS_DATABASE_URL: url, ...MOTO_ENV };
      const messages = `dynamodb://served-messages?endpoint=${moto!.url}`;
      const s = await startServe(h, [], { env, flags: [...AGENT_FLAGS, '-c', `server.messages=${messages}`] });
      servers.push(s);
      const { token } = JSON.parse(
        atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], { env: { ATLAS_HOME: h, ...env } }).stdout,
      );
      const turn = await prompt(s.url, token, 'd1', { prompt: 'hello' });
      expect(turn.events.at(-1)?.data, JSON.stringify(turn.json) + s.stderr() + s.lines.join('\n')).toMatchObject({ ok: true });
      const listed = (await getJson(s.url, token, '/conversations/d1/messages')).json.messages;
      expect(listed.length).toBeGreaterThan(1);
      const state = await openState({ home: tempDir(), url, messages });
      try {
        expect((await state.listMessages('alice', 'd1')).map((m) => m.body)).toEqual(listed.map((m: { body: string }) => m.body));
      } finally {
        await state.close();
      }
      const sqlOnly = await openState({ home: tempDir(), url });
      try {
        expect(await sqlOnly.listMessages('alice', 'd1')).toEqual([]);
      } finally {
        await sqlOnly.close();
      }
    },
    90_000,
  );
});

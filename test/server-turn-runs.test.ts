// A turn's agent run (its folder under the conversation's): the state's record names it, so the
// next turn finds the run it continues without reading every earlier run's record (a long
// conversation's turn would), and its folder is written from the thread pool, whole by the turn's end.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { conversationFiles } from '../src/server/conversations/conversation-store.js';
import { openState } from '../src/server/state/open.js';
import { tempDir } from './helpers/core-fixtures.js';
import { prompt } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

const serve = inProcessServers();

async function lastRun(home: string): Promise<string | undefined> {
  const state = await openState({ home, url: '' });
  try {
    return (await state.getConversation('alice', 'c'))?.last_turn?.run;
  } finally {
    await state.close();
  }
}

describe("a conversation's runs", () => {
  it('continue the run the last turn recorded, without reading earlier runs, each folder whole at the end', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    const runs = join(conversationFiles(home, 'alice', 'c').dir, 'conversations');

    const first = await prompt(url, token, 'c', { prompt: 'turn 1' });
    expect(first.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn: 1 } });
    const run1 = await lastRun(home);
    expect(run1).toMatch(/^conv-/);
    const record1 = JSON.parse(readFileSync(join(runs, run1!, 'conversation.json'), 'utf8'));
    expect(record1).toMatchObject({ id: run1, status: 'completed', continues: null });
    // The run's messages are all in its folder by the turn's end: the prompt, the agent's, the tool's.
    const lines = readFileSync(join(runs, run1!, 'messages.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l).key)[0]).toBe('prompt');
    expect(lines.length).toBe(record1.stats.messages_exchanged);

    // An earlier run's record is not read: with its session changed on disk, a search by session
    // would find no run to continue.
    writeFileSync(join(runs, run1!, 'conversation.json'), JSON.stringify({ ...record1, session_id: 'elsewhere' }));
    const second = await prompt(url, token, 'c', { prompt: 'turn 2' });
    expect(second.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn: 2 } });
    const run2 = await lastRun(home);
    expect(run2).not.toBe(run1);
    expect(JSON.parse(readFileSync(join(runs, run2!, 'conversation.json'), 'utf8'))).toMatchObject({
      id: run2,
      status: 'completed',
      continues: run1,
      session_id: record1.session_id,
    });
    expect(readdirSync(runs).sort()).toEqual([run1, run2].sort());
  });
});

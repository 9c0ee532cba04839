// A turn's agent run (its folder under the conversation's): the state's record names it, so the
// next turn finds the run it continues without reading every earlier run's record (a long
// conversation's turn would), and its folder is written from the thread pool, whole by the turn's end.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { processStartIdentity } from '../src/liveness/process-identity.js';
import { createToken } from '../src/server/accounts/tokens.js';
import { conversationFiles, processGroupsDir } from '../src/server/conversations/conversation-store.js';
import { lastRunMessages, nextRunPlace } from '../src/server/conversations/messages.js';
import { openState } from '../src/server/state/open.js';
import { tempDir } from './helpers/core-fixtures.js';
import { prompt } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

const serve = inProcessServers();

async function lastRun(home: string): Promise<{ run?: string; run_place?: number; keys: string[] }> {
  const state = await openState({ home, url: '' });
  try {
    const last = (await state.getConversation('alice', 'c'))?.last_turn;
    const keys = (await state.listMessages('alice', 'c', { turn: last?.run_place ?? -1 })).map((m) => m.key);
    return { ...last, keys };
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
    const { run: run1, run_place: place1, keys: keys1 } = await lastRun(home);
    expect(run1).toMatch(/^conv-/);
    expect(place1).toBe(1);
    const record1 = JSON.parse(readFileSync(join(runs, run1!, 'conversation.json'), 'utf8'));
    expect(record1).toMatchObject({ id: run1, status: 'completed', continues: null });
    // The run's messages are all in its folder by the turn's end: the prompt, the agent's, the tool's.
    const lines = readFileSync(join(runs, run1!, 'messages.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l).key)[0]).toBe('prompt');
    expect(lines.length).toBe(record1.stats.messages_exchanged);
    // The state has the same messages, under the run's place.
    expect(keys1).toEqual(lines.map((l) => `${run1}:${JSON.parse(l).key}`));

    // Earlier runs are not read nor counted: with the first run's folder gone (as on another
    // server's disk), a search by session would find no run to continue, and a count of folders
    // would give the second run the first one's place.
    rmSync(join(runs, run1!), { recursive: true });
    const second = await prompt(url, token, 'c', { prompt: 'turn 2' });
    expect(second.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn: 2 } });
    const { run: run2, run_place: place2, keys: keys2 } = await lastRun(home);
    expect(run2).not.toBe(run1);
    expect(place2).toBe(2);
    expect(keys2.length).toBeGreaterThan(0);
    expect(keys2.every((k) => k.startsWith(`${run2}:`))).toBe(true);
    expect(JSON.parse(readFileSync(join(runs, run2!, 'conversation.json'), 'utf8'))).toMatchObject({
      id: run2,
      status: 'completed',
      continues: run1,
      session_id: record1.session_id,
    });
    expect(readdirSync(runs)).toEqual([run2]);
  });

  it("stops a dead server's agent, recorded in that server's process-groups file, before taking its turn over", async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    // What a SIGKILLed server leaves: its agent still running in a group of its own, its owner.json
    // naming its process-groups file, whose line names that group.
    const agent = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    const exited = new Promise((done) => agent.on('exit', done));
    onTestFinished(() => {
      if (agent.exitCode === null && agent.signalCode === null) process.kill(-agent.pid!, 'SIGKILL');
    });
    const dead = spawnSync('true').pid;
    const owner = conversationFiles(home, 'alice', 'c').owner;
    mkdirSync(join(owner, '..'), { recursive: true });
    const file = `${dead}-0123456789ab.jsonl`;
    mkdirSync(processGroupsDir(home), { recursive: true });
    const group = { pid: agent.pid!, process_start: processStartIdentity(agent.pid!)! };
    writeFileSync(join(processGroupsDir(home), file), `${JSON.stringify({ owner, groups: [group] })}\n`);
    const now = new Date().toISOString();
    writeFileSync(
      owner,
      JSON.stringify({
        pid: dead,
        host: hostname(),
        process_start: 'gone',
        started_at: now,
        heartbeat_at: now,
        heartbeat_interval_ms: 10_000,
        stale_threshold_ms: 300_000,
        process_groups_file: file,
      }),
    );
    const done = await prompt(url, token, 'c', { prompt: 'turn 1' });
    expect(done.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
    await exited;
    expect(agent.signalCode).toBe('SIGKILL');
  });

  it("numbers a run from the record's last one, or, for an older record, from the run folders on disk", () => {
    const home = tempDir();
    expect(nextRunPlace(home, 'alice', 'c', null)).toBe(1);
    expect(nextRunPlace(home, 'alice', 'c', { run_place: 4 })).toBe(5);
    const runs = join(conversationFiles(home, 'alice', 'c').dir, 'conversations');
    for (const id of ['conv-000000000001', 'conv-000000000002']) mkdirSync(join(runs, id), { recursive: true });
    mkdirSync(join(runs, 'not-a-run'));
    expect(nextRunPlace(home, 'alice', 'c', {})).toBe(3);
    // Without the recorder's lines, a run's messages are read from its folder.
    const line = { key: 'prompt', conversation_id: 'conv-000000000002', body: 'hi', role: 1, timestamp: 1, tokens: 0, tool_calls: [] };
    writeFileSync(join(runs, 'conv-000000000002', 'messages.jsonl'), `${JSON.stringify(line)}\n`);
    expect(lastRunMessages(home, 'alice', 'c', { id: 'conv-000000000002', place: 2 })).toMatchObject([
      { key: 'conv-000000000002:prompt', turn: 2, account: 'alice', conversation_id: 'c', body: 'hi' },
    ]);
  });
});

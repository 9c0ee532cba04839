// A turn's end (issue 23): its final record, its `usage` event and its lease given back are one
// transaction, and the lease is given back once, by it: no second release after it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { openState } from '../src/server/state/open.js';
import { SqlEvents } from '../src/server/state/sql-events.js';
import { tempDir } from './helpers/core-fixtures.js';
import { prompt } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

const serve = inProcessServers();

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the end of a turn', () => {
  it('gives the lease back once, in the transaction that ends the turn', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    const finish = vi.spyOn(SqlEvents.prototype, 'finishTurn');
    const release = vi.spyOn(SqlEvents.prototype, 'releaseLease');
    for (const turn of [1, 2]) {
      const done = await prompt(url, token, 'c', { prompt: `turn ${turn}` });
      expect(done.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn } });
    }
    expect(finish).toHaveBeenCalledTimes(2);
    expect(release).not.toHaveBeenCalled();
    const state = await openState({ home, url: '' });
    try {
      // Free for the next turn, on any server.
      expect(await state.getLease('conversation:alice/c')).toMatchObject({ holder: '', expires_at: 0 });
    } finally {
      await state.close();
    }
  });

  it("stores a turn's start and its end in one transaction each on SQLite: no separate record or messages writes", async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    await prompt(url, token, 'c', { prompt: 'turn 1' });
    const start = vi.spyOn(SqlEvents.prototype, 'startTurn');
    const put = vi.spyOn(SqlEvents.prototype, 'putConversation');
    const messages = vi.spyOn(SqlEvents.prototype, 'putMessages');
    const done = await prompt(url, token, 'c', { prompt: 'turn 2' });
    expect(done.events[0]).toMatchObject({ event: 'turn_started', data: { turn: 2 } });
    expect(done.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true, turn: 2 } });
    expect(start).toHaveBeenCalledTimes(1);
    expect(put).not.toHaveBeenCalled();
    expect(messages).not.toHaveBeenCalled();
    const state = await openState({ home, url: '' });
    try {
      // The end's transaction stored the messages and the record beside `usage`.
      expect((await state.listMessages('alice', 'c', { turn: 2 })).length).toBeGreaterThan(0);
      expect(await state.getConversation('alice', 'c')).toMatchObject({ turns: 2, status: 'completed' });
      // Every event of the conversation copied into the account's log, in order, once.
      const copies = (await state.eventsAfter('account:alice', 0)).map((e) => (e.data['source'] as { event_id: number }).event_id);
      const events = (await state.eventsAfter('conversation:alice/c', 0)).map((e) => e.id);
      expect(copies).toEqual(events);
    } finally {
      await state.close();
    }
  });

  it('ends a turn whose start the state refused with an error in its usage event, the lease given back', async () => {
    const home = tempDir();
    const { token } = await createToken(home, 'alice');
    const { url } = await serve(home, agentConfig());
    vi.spyOn(SqlEvents.prototype, 'startTurn').mockRejectedValueOnce(new Error('disk full'));
    const done = await prompt(url, token, 'c', { prompt: 'turn 1' });
    expect(done.events.map((e) => e.event)).toEqual(['usage']);
    expect(done.events[0]).toMatchObject({ data: { ok: false, error: expect.stringContaining('could not be recorded as started') } });
    const state = await openState({ home, url: '' });
    try {
      expect(await state.getLease('conversation:alice/c')).toMatchObject({ holder: '' });
    } finally {
      await state.close();
    }
    // The next turn runs.
    const next = await prompt(url, token, 'c', { prompt: 'turn 2' });
    expect(next.events.at(-1)).toMatchObject({ event: 'usage', data: { ok: true } });
  });
});

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
});

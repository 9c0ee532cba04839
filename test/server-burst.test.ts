// Issue 19: 200 conversations at once, 2 turns each, against `atlas serve` started by the test and
// a real HTTP client (fetch). The agent is a bash script (test/fixtures/server/shell-agent.sh), so
// what is tested is the server under a burst: every turn answered, each stream carrying its own
// conversation's answer, event ids without gaps or repeats across turns, the records complete, and
// no agent left running afterwards.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { createToken, getJson, processesWith, prompt, serversOfThisFile, startServe } from './helpers/server-fixtures.js';

checkResponses();

const servers = serversOfThisFile();
const SHELL_AGENT = join(REPO_ROOT, 'test', 'fixtures', 'server', 'shell-agent.sh');
const CONVERSATIONS = 200;
const TURNS = 2;

describe('a burst of conversations', () => {
  it(`serves ${CONVERSATIONS} conversations at once, ${TURNS} turns each: 0 errors, each stream its own, ids in order, nothing left running`, async () => {
    const home = tempDir();
    const token = createToken(home, 'burst');
    // The account's limits lifted, as the bench does: with the defaults most of the burst would
    // (rightly) wait in the queue or get 429, which test/server-limits.test.ts covers.
    const s = await startServe(home, [], {
      flags: [
        '-c',
        'ai.agent=command',
        '-c',
        `ai.command=/bin/bash ${SHELL_AGENT}`,
        '-c',
        'server.max_streams_per_account=1000',
        '-c',
        'server.max_running_per_account=1000',
        '-c',
        'server.max_queued_per_account=1000',
        '-c',
        'server.requests_per_second=0',
      ],
    });
    servers.push(s);

    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: CONVERSATIONS }, async (_, i) => {
        const id = `burst-${i}`;
        let lastId = 0;
        for (let turn = 1; turn <= TURNS; turn++) {
          const text = `turn ${turn} of "${id}"`;
          const r = await prompt(s.url, token, id, { prompt: text });
          if (r.status !== 200) {
            failures.push(`${id} turn ${turn}: status ${r.status} ${JSON.stringify(r.json)}`);
            return;
          }
          const ids = r.events.map((e) => Number(e.id));
          const usage = r.events.at(-1)!;
          const answer = r.events.find((e) => e.event === 'message' && e.data.message.role === 2);
          if (usage.event !== 'usage' || usage.data.ok !== true || usage.data.turn !== turn)
            failures.push(`${id} turn ${turn}: ended ${JSON.stringify(usage)}`);
          else if (answer?.data.message.body !== `answer to: ${text}`)
            failures.push(`${id} turn ${turn}: answered ${JSON.stringify(answer?.data.message.body)}`);
          else if (ids.some((n, k) => n !== lastId + 1 + k)) failures.push(`${id} turn ${turn}: ids ${ids.join(',')} after ${lastId}`);
          else if (turn === TURNS && usage.data.conversation.messages_exchanged !== 2 * TURNS)
            failures.push(`${id}: ${usage.data.conversation.messages_exchanged} messages`);
          lastId = ids.at(-1)!;
        }
      }),
    );
    expect(failures).toEqual([]);

    // Every conversation is recorded, completed, with both turns: read through the paged list.
    const seen = new Map<string, any>();
    let cursor: string | null = null;
    do {
      const page: { status: number; json: any } = await getJson(
        s.url,
        token,
        `/conversations?limit=64${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      for (const c of page.json.conversations) seen.set(c.id, c);
      cursor = page.json.next_cursor;
    } while (cursor);
    expect(seen.size).toBe(CONVERSATIONS);
    expect([...seen.values()].every((c) => c.status === 'completed' && c.turns === TURNS)).toBe(true);

    // The server is still ready, and no agent outlived its turn (the server's own command line names it).
    expect((await fetch(`${s.url}/ready`)).status).toBe(200);
    expect(processesWith(SHELL_AGENT).filter((pid) => pid !== s.child.pid)).toEqual([]);
    expect(s.lines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  }, 180_000);
});

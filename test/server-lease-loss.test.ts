// Issue 37: a replica that cannot renew its turn's lease stops the turn's agent itself once the
// lease would have expired (another replica may then take the turn over: two agents must never
// work on one conversation). A server on a real PostgreSQL runs a --local turn; the database is
// stopped (pg_ctl) mid-turn; the agent is gone before the database comes back.
import { describe, expect, it } from 'vitest';
import { createToken } from '../src/server/accounts/tokens.js';
import { tempDir } from './helpers/core-fixtures.js';
import { checkResponses } from './helpers/openapi-check.js';
import { postgresSkipReason, usePostgres } from './helpers/postgres.js';
import { auth, processesWith, readSse, waitUntil } from './helpers/server-fixtures.js';
import { agentConfig, inProcessServers } from './helpers/server-inprocess-fixtures.js';

checkResponses();
const serve = inProcessServers();

describe.skipIf(postgresSkipReason !== undefined)(
  `a turn whose lease cannot be renewed${postgresSkipReason ? ` (skipped: ${postgresSkipReason})` : ''}`,
  () => {
    const postgres = usePostgres();

    it('stops its agent once the lease would have expired, while the database is down', async () => {
      const home = tempDir();
      const pg = postgres();
      const databaseUrl = await pg.createDatabase('leaseloss');
      const { token } = await createToken(home, 'alice', new Date(), { database: databaseUrl });
      const config = agentConfig((c) => {
        c.server.database = databaseUrl;
        c.server.lease_ttl = 3_000;
        c.ai.command = 'eval "$ATLAS_PROMPT"';
      });
      const { url, lines } = await serve(home, config);
      const marker = '41.4213';
      const res = await fetch(`${url}/conversations/held/sandbox/held`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ prompt: `sleep ${marker}` }),
      });
      expect(res.status).toBe(200);
      void readSse(res).catch(() => undefined);
      await waitUntil(() => (processesWith(marker).length > 0 ? true : undefined), 20_000, 'the agent to start');
      pg.kill();
      try {
        await waitUntil(() => (processesWith(marker).length === 0 ? true : undefined), 60_000, 'the agent to be stopped');
        expect(lines.some((l) => l.includes('"msg":"lease lost"') && l.includes('not renewed before it expired'))).toBe(true);
      } finally {
        pg.start();
      }
    }, 120_000);
  },
);

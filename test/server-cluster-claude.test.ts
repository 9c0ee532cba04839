// A conversation's Claude Code session follows it between replicas (issue 23): two `atlas serve`
// with different homes (so Claude Code names the workspace's project folder differently) and
// different Claude Code folders, on one real PostgreSQL and one s3rver store, running the real
// Claude Code CLI against the fake Messages API. Turn 1 runs on A, turn 2 on B: B restores the
// workspace and the session from the store and resumes the same session, so the model is sent
// turn 1's exchange with turn 2's prompt; turn 3 back on A replaces A's older copy of the session
// with the store's. The session's files never enter the user's workspace.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atlasSync, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import type { TestPostgres } from './helpers/postgres.js';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';
import type { S3Server } from './helpers/s3rver.js';
import { listKeys, startS3rver } from './helpers/s3rver.js';
import { prompt, serversOfThisFile, startServe } from './helpers/server-fixtures.js';

const servers = serversOfThisFile('SIGTERM');
let pgServer: TestPostgres | undefined;
let s3: S3Server | undefined;
let fake: FakeAnthropic | undefined;

beforeAll(async () => {
  ensureBuilt();
  if (postgresSkipReason) return;
  [pgServer, s3] = await Promise.all([startPostgres(), startS3rver('atlas-claude-cluster')]);
}, 120_000);

afterAll(async () => {
  await fake?.close();
  await Promise.all([pgServer?.stop(), s3?.stop()]);
});

describe.skipIf(postgresSkipReason !== undefined)(
  `a Claude Code session between replicas${postgresSkipReason ? ` (skipped: ${postgresSkipReason})` : ''}`,
  () => {
    it('turn 1 on A, turn 2 on B, turn 3 on A again: each resumes the same session with all its history, restored from the store', async () => {
      fake = await startFakeAnthropic([
        { text: 'I will remember the word PELICAN.', usage: { input_tokens: 100, output_tokens: 10 } },
        { text: 'The word was PELICAN.', usage: { input_tokens: 150, output_tokens: 8 } },
        { text: 'You asked me which word it was.', usage: { input_tokens: 200, output_tokens: 8 } },
      ]);
      const url = await pgServer!.createDatabase('claude');
      const flags = [
        '-c',
        'ai.agent=claude',
        '-c',
        `sync.store=${s3!.config.store}/claude`,
        '-c',
        `sync.s3.endpoint=${s3!.config.endpoint}`,
        '-c',
        'sync.s3.force_path_style=true',
        '-c',
        'sync.init_from_store=true',
      ];
      const [homeA, homeB] = [tempDir(), tempDir()];
      // Each replica its own Claude Code folder, as on two machines.
      const envOf = (): NodeJS.ProcessEnv => ({ ...claudeEnv(fake!), ATLAS_DATABASE_URL: url, ...s3!.env });
      const [envA, envB] = [envOf(), envOf()];
      const [a, b] = await Promise.all([startServe(homeA, [], { env: envA, flags }), startServe(homeB, [], { env: envB, flags })]);
      servers.push(a!, b!);
      const made = atlasSync(['--json', 'serve', 'token', 'create', '--account', 'alice'], {
        env: { ATLAS_HOME: homeA, ATLAS_DATABASE_URL: url },
      });
      expect(made.code, made.stderr).toBe(0);
      const { token } = JSON.parse(made.stdout);

      const first = await prompt(a!.url, token, 'c', { prompt: 'remember the word pelican', provider: 'claude' });
      const usage1 = first.events.at(-1)!.data;
      expect(usage1).toMatchObject({ ok: true, turn: 1 });
      const sessionId = usage1.session_id as string;
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
      // The session went to the store as a tree of its own, next to the workspace's.
      expect((await listKeys(s3!, 'stores/claude/session.alice.c/')).some((k) => k.endsWith('/.sandbox-state'))).toBe(true);

      const second = await prompt(b!.url, token, 'c', { prompt: 'which word was it?' });
      expect(second.status).toBe(200);
      const started = second.events.find((e) => e.event === 'turn_started')!.data;
      expect(started.resumes_session).toBe(sessionId);
      const usage2 = second.events.at(-1)!.data;
      expect(usage2).toMatchObject({ ok: true, turn: 2, session_id: sessionId });
      // Turn 2's request to the API carried turn 1's exchange: the history travelled.
      const sent = JSON.stringify(fake.messageRequests().at(-1)!.body.messages);
      expect(sent).toContain('remember the word pelican');
      expect(sent).toContain('I will remember the word PELICAN.');
      expect(sent).toContain('which word was it?');
      // B placed it in its own Claude Code folder, under its own workspace's project name.
      const projects = readdirSync(join(envB['CLAUDE_CONFIG_DIR']!, 'projects'));
      expect(projects).toHaveLength(1);
      expect(projects[0]).toContain(homeB.replace(/[^a-zA-Z0-9]/g, '-'));
      // Turn 3 back on A, whose own transcript stops at turn 1: it catches up with the store and
      // resumes the session with turn 2 in it too.
      const third = await prompt(a!.url, token, 'c', { prompt: 'what did I ask you last?' });
      expect(third.events.at(-1)!.data).toMatchObject({ ok: true, turn: 3, session_id: sessionId });
      const sentA = JSON.stringify(fake.messageRequests().at(-1)!.body.messages);
      for (const text of ['remember the word pelican', 'which word was it?', 'The word was PELICAN.', 'what did I ask you last?'])
        expect(sentA).toContain(text);
      // The user's workspace holds none of it.
      const workspaceB = join(homeB, 'server', 'accounts', 'alice', 'conversations', 'c', 'workspace');
      expect(existsSync(workspaceB)).toBe(true);
      expect(readdirSync(workspaceB).filter((n) => n.includes('session') || n.endsWith('.jsonl'))).toEqual([]);
    }, 180_000);
  },
);

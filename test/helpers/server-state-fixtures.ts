import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { ConversationRow, StoredMessage } from '../../src/server/state/types.js';
import type { TestPostgres } from './postgres.js';
import { postgresSkipReason, startPostgres } from './postgres.js';

// Exported as a live binding: set by useStateServers once PostgreSQL is up.
export let pgServer: TestPostgres | undefined;
let dbCount = 0;
const homes: string[] = [];

export async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function newHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'atlas-state-'));
  homes.push(home);
  return home;
}

/** Starts PostgreSQL (unless it cannot run here) before the calling file's tests; stops it and removes the homes after. */
export function useStateServers(): void {
  beforeAll(async () => {
    if (!postgresSkipReason) pgServer = await startPostgres();
  }, 120_000);

  afterAll(async () => {
    await pgServer?.stop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });
}

export interface Target {
  home: string;
  url: string | undefined;
}

export const backends = [
  { name: 'sqlite', skip: undefined as string | undefined, target: async (): Promise<Target> => ({ home: newHome(), url: undefined }) },
  {
    name: 'postgres',
    skip: postgresSkipReason,
    target: async (): Promise<Target> => ({ home: newHome(), url: await pgServer!.createDatabase(`t${++dbCount}`) }),
  },
];

export function conversation(account: string, id: string, updated: string, extra: Partial<ConversationRow> = {}): ConversationRow {
  return {
    id,
    account,
    agent_id: null,
    provider: 'command',
    sandbox_id: null,
    session_id: `s-${id}`,
    created_at: '2026-11-25T10:00:00.000Z',
    updated_at: updated,
    status: 'idle',
    turns: 0,
    last_turn: null,
    stats: {
      messages_exchanged: 0,
      total_input_tokens: 0,
      total_output_tokens: null,
      total_cache_tokens: 0,
      cache_read_tokens: 0,
      cache_creation_tokens: 0,
      cost_usd: null,
      partial: true,
      models: [],
    },
    ...extra,
  };
}

export function message(id: string, key: string, timestamp: number, turn = 1): StoredMessage {
  return {
    account: 'alice',
    conversation_id: id,
    key,
    body: `body of ${key}`,
    role: 2,
    timestamp,
    tokens: 7,
    turn,
    tool_calls: [
      { id: `t-${key}`, type: 'tool_use', name: 'Bash', input: { command: 'ls' }, output: 'a\nb', status: 'success', error: '' },
    ],
  };
}

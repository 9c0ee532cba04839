// The server's handle on its state (src/server/state): opened on first use with server.database or
// ATLAS_DATABASE_URL (else the embedded SQLite file), after which what an older atlas kept in files
// (tokens.json, conversation.json records, the task index, events.jsonl logs) is adopted.
import { existsSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import { adoptConversationFiles } from './conversation-store.js';
import { adoptEventFiles, adoptTaskFiles } from './event-files.js';
import { redactUrl } from '../domain/redact-url.js';
import { databaseUrl, isPostgresUrl, openState } from './state/open.js';
import type { ServerState } from './state/types.js';
import { readTokens, tokensPath } from './token-file.js';

/**
 * Brings the tokens of a tokens.json (atlas before the state layer) into the state. Ids already
 * there, revoked ones too, are left alone: a revoked token never comes back. The file is kept.
 */
export async function adoptTokenFile(home: string, state: ServerState): Promise<{ added: number; present: number }> {
  if (!existsSync(tokensPath(home))) return { added: 0, present: 0 };
  const known = new Set((await state.allTokens()).map((t) => t.id));
  let added = 0;
  let present = 0;
  for (const t of readTokens(home)) {
    if (known.has(t.id)) {
      present++;
      continue;
    }
    const row = { id: t.id, account: t.account, sha256: t.sha256, created_at: t.created_at, expires_at: t.expires_at ?? null, read_only: t.read_only === true };
    if (await state.addToken(row)) added++;
    else present++;
  }
  return { added, present };
}

/**
 * Opens the state for this home without adopting anything: `configured` is server.database ('' or
 * undefined: ATLAS_DATABASE_URL, else SQLite). Errors are for people: the URL checked, the
 * database named without its password.
 */
export async function openConfiguredState(home: string, configured = '', poolSize?: number, messages?: string): Promise<ServerState> {
  const url = databaseUrl(configured);
  if (url !== '' && !isPostgresUrl(url)) {
    throw new AtlasError(`server.database must be a postgres:// URL, got "${redactUrl(url)}"`, {
      exitCode: EXIT.input,
      hint: 'for example postgres://atlas:PASSWORD@db.example.com:5432/atlas; leave it empty for the embedded SQLite file',
    });
  }
  try {
    return await openState({ home, url, messages, ...(poolSize ? { poolSize } : {}) });
  } catch (error) {
    throw new AtlasError((error as Error).message, { exitCode: EXIT.failure, hint: 'check that the database is running and the URL (server.database or ATLAS_DATABASE_URL) is right' });
  }
}

/** The state for this home, with an old tokens.json, conversation.json records and event logs adopted. */
export async function openServerState(home: string, configured = '', poolSize?: number, messages?: string): Promise<ServerState> {
  const state = await openConfiguredState(home, configured, poolSize, messages);
  try {
    await adoptTokenFile(home, state);
    await adoptConversationFiles(home, state);
    await adoptTaskFiles(home, state);
    await adoptEventFiles(home, state);
  } catch (error) {
    await state.close();
    throw error;
  }
  return state;
}

/** Runs `fn` with the state of this home open, and closes it after. */
export async function withServerState<T>(home: string, configured: string | undefined, fn: (state: ServerState) => Promise<T>): Promise<T> {
  const state = await openServerState(home, configured ?? '', 2);
  try {
    return await fn(state);
  } finally {
    await state.close();
  }
}

/** Opened on first use (a server that gets no request never loads the database driver); a failed open is retried on the next. */
export class LazyState {
  private opening: Promise<ServerState> | undefined;
  private closed = false;

  constructor(
    private readonly home: string,
    private readonly configured: string,
    private readonly messages = '',
  ) {}

  get(): Promise<ServerState> {
    if (this.closed) return Promise.reject(new Error('the server state is closed: the server is stopping'));
    if (!this.opening) {
      const opening = openServerState(this.home, this.configured, undefined, this.messages);
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
      this.opening = opening;
    }
    return this.opening;
  }

  async close(): Promise<void> {
    this.closed = true;
    const opening = this.opening;
    this.opening = undefined;
    if (opening) await (await opening.catch(() => undefined))?.close();
  }
}

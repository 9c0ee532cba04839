// The server's handle on its state (src/server/state): opened on first use with server.database or
// ATLAS_DATABASE_URL (else the embedded SQLite file). The first time a home opens it, what an older
// atlas kept there in files (tokens.json, conversation.json records, the task index, events.jsonl
// logs) is adopted, by the import `atlas serve migrate` runs (state-import.ts), then never again.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { redactUrl } from '../../domain/redact-url.js';
import { databaseUrl, isPostgresUrl, openState } from '../state/open.js';
import type { ServerState } from '../state/types.js';

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
    throw new AtlasError((error as Error).message, {
      exitCode: EXIT.failure,
      hint: 'check that the database is running and the URL (server.database or ATLAS_DATABASE_URL) is right',
    });
  }
}

/** The state for this home, with an older home's files adopted the first time (state-import.ts). */
export async function openServerState(home: string, configured = '', poolSize?: number, messages?: string): Promise<ServerState> {
  const state = await openConfiguredState(home, configured, poolSize, messages);
  try {
    const { adoptFilesOnce } = await import('./state-import.js');
    await adoptFilesOnce(home, state);
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

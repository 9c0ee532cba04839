// `atlas serve migrate`: brings a file-based server home (tokens.json, conversation folders, event
// logs, the task index) into the server state, and into PostgreSQL the embedded state's tokens too.
// Running it again adds only what is new; the files are left as they are, so nothing is lost if
// the import is stopped half-way.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { ServerConversation } from '../conversations/conversation-store.js';
import { conversationFiles, listAccounts, listConversationFiles } from '../conversations/conversation-store.js';
import { messagesFromRuns } from '../conversations/messages.js';
import { openState, stateFilePath } from '../state/open.js';
import { readTokens, tokensPath } from '../state/token-file.js';
import type { ServerState } from '../state/types.js';
import { importLogFile, legacyLogFiles, taskRecordFiles } from './event-files.js';

export interface ImportReport {
  tokens: number;
  accounts: number;
  conversations: number;
  messages: number;
  events: number;
  tasks: number;
  /** Records already in the state, left as they were. */
  unchanged: number;
  /** Conversation records that could not be read, left out (when the state opens; migrate stops). */
  skipped: number;
}

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
    const row = {
      id: t.id,
      account: t.account,
      sha256: t.sha256,
      created_at: t.created_at,
      expires_at: t.expires_at ?? null,
      read_only: t.read_only === true,
    };
    if (await state.addToken(row)) added++;
    else present++;
  }
  return { added, present };
}

function recordProblem(c: ServerConversation): string | undefined {
  const stats = c.stats as Partial<ServerConversation['stats']> | undefined;
  if (typeof stats !== 'object' || stats === null) return 'it has no stats';
  for (const k of ['messages_exchanged', 'total_input_tokens', 'cache_read_tokens', 'cache_creation_tokens'] as const) {
    if (typeof stats[k] !== 'number') return `its stats have no ${k}`;
  }
  if (!Array.isArray(stats.models)) return 'its stats have no models list';
  if (typeof c.turns !== 'number' || typeof c.status !== 'string' || typeof c.created_at !== 'string' || typeof c.updated_at !== 'string')
    return 'it lacks turns, status or its times';
  return undefined;
}

async function importConversation(state: ServerState, home: string, c: ServerConversation, report: ImportReport): Promise<void> {
  const { account } = c;
  // Already there: left as it is (the state's record is newer than an old file).
  if (await state.getConversation(account, c.id)) report.unchanged++;
  else {
    await state.putConversation(c);
    report.conversations++;
  }
  const messages = messagesFromRuns(home, account, c.id);
  const had = (await state.listMessages(account, c.id)).length;
  await state.putMessages(messages);
  report.messages += Math.max(0, messages.length - had);
  report.unchanged += Math.min(had, messages.length);
}

/**
 * Moving to PostgreSQL from the embedded state: its tokens (revoked ones as revoked, so an old
 * tokens.json adopted later cannot bring them back), conversation records, their messages from
 * the run folders, and every event log with its ids and counter go along.
 */
async function copyEmbeddedState(home: string, state: ServerState, report: ImportReport): Promise<void> {
  if (!existsSync(stateFilePath(home))) return;
  const embedded = await openState({ home, url: '' });
  try {
    for (const t of await embedded.allTokens()) {
      if (await state.addToken(t)) report.tokens++;
      else report.unchanged++;
    }
    for (const a of await embedded.listAccounts()) {
      for (const c of await embedded.listConversations(a.name)) await importConversation(state, home, c as ServerConversation, report);
    }
    for (const { log, last_id } of await embedded.logs()) {
      let after = 0;
      for (;;) {
        const page = await embedded.eventsAfter(log, after, 1_000);
        const added = await state.importEvents(log, page, last_id);
        report.events += added;
        report.unchanged += page.length - added;
        if (page.length < 1_000) break;
        after = page[page.length - 1]!.id;
      }
    }
  } finally {
    await embedded.close();
  }
}

export interface ImportOptions {
  /**
   * Opening the state (not `atlas serve migrate`): a record it cannot read is skipped (counted in
   * `skipped`) rather than stopping the import, and the embedded state is not copied.
   */
  adopting?: boolean;
}

/** The marker of this home's files imported into the state (a home is a path on one machine). */
export function importMarker(home: string): string {
  return `files imported: ${hostname()}:${resolve(home)}`;
}

/**
 * Brings this home's files into the state: tokens, accounts, conversations with their messages,
 * the task index and every event log (with their ids). Idempotent: what is there stays as it is.
 * Records the home's marker once it has all gone in, so opening the state does it only once.
 */
export async function importFileState(home: string, state: ServerState, options: ImportOptions = {}): Promise<ImportReport> {
  const report: ImportReport = { tokens: 0, accounts: 0, conversations: 0, messages: 0, events: 0, tasks: 0, unchanged: 0, skipped: 0 };
  // Read before tokens go in: a token brings its account along.
  const accounts = new Set((await state.listAccounts()).map((a) => a.name));
  const tokens = await adoptTokenFile(home, state);
  report.tokens += tokens.added;
  report.unchanged += tokens.present;
  for (const a of await state.listAccounts()) {
    if (!accounts.has(a.name)) {
      accounts.add(a.name);
      report.accounts++;
    }
  }
  for (const account of listAccounts(home)) {
    const present = listConversationFiles(home, account);
    if (!accounts.has(account)) {
      await state.ensureAccount(account);
      report.accounts++;
    }
    for (const c of present) {
      const files = conversationFiles(home, account, c.id);
      // A record the import cannot read stops it, named: nothing is skipped quietly (the files stay).
      const problem = recordProblem(c);
      if (problem && options.adopting) {
        report.skipped++;
        continue;
      }
      if (problem) {
        throw new AtlasError(`cannot import ${files.record}: ${problem}`, {
          exitCode: EXIT.input,
          hint: 'repair or move that folder away, then run `atlas serve migrate` again (what was imported stays)',
        });
      }
      await importConversation(state, home, c, report);
    }
  }
  for (const task of taskRecordFiles(home)) {
    if (await state.getTask(task.task_id)) report.unchanged++;
    else report.tasks++;
    await state.putTask(task);
  }
  // Every log file: conversations' (removed ones' last ids too), accounts' and tasks'.
  for (const { key, path } of legacyLogFiles(home)) {
    const r = await importLogFile(state, key, path);
    report.events += r.added;
    report.unchanged += r.present;
  }
  if (state.backend === 'postgres' && !options.adopting) await copyEmbeddedState(home, state, report);
  await state.setMarker(importMarker(home));
  return report;
}

/**
 * When the state opens: an older home's files are adopted the first time only (the marker says
 * so), not on every open (every `atlas serve token` command opens it). Returns undefined when they
 * were adopted before.
 */
export async function adoptFilesOnce(home: string, state: ServerState): Promise<ImportReport | undefined> {
  if (await state.hasMarker(importMarker(home))) return undefined;
  return importFileState(home, state, { adopting: true });
}

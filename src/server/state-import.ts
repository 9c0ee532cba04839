// `atlas serve migrate`: brings a file-based server home (tokens.json, conversation folders, event
// logs, the task index) into the server state, and into PostgreSQL the embedded state's tokens too.
// Running it again adds only what is new; the files are left as they are, so nothing is lost if
// the import is stopped half-way.
import { existsSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, listAccounts, listConversationFiles } from './conversation-store.js';
import { legacyLogFiles, importLogFile, taskRecordFiles } from './event-files.js';
import { openState, stateFilePath } from './state/open.js';
import { messagesFromRuns } from './messages.js';
import type { ServerState } from './state/types.js';
import { adoptTokenFile } from './server-state.js';

export interface ImportReport {
  tokens: number;
  accounts: number;
  conversations: number;
  messages: number;
  events: number;
  tasks: number;
  /** Records already in the state, left as they were. */
  unchanged: number;
}

function recordProblem(c: ServerConversation): string | undefined {
  const stats = c.stats as Partial<ServerConversation['stats']> | undefined;
  if (typeof stats !== 'object' || stats === null) return 'it has no stats';
  for (const k of ['messages_exchanged', 'total_input_tokens', 'cache_read_tokens', 'cache_creation_tokens'] as const) {
    if (typeof stats[k] !== 'number') return `its stats have no ${k}`;
  }
  if (!Array.isArray(stats.models)) return 'its stats have no models list';
  if (typeof c.turns !== 'number' || typeof c.status !== 'string' || typeof c.created_at !== 'string' || typeof c.updated_at !== 'string') return 'it lacks turns, status or its times';
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

export async function importFileState(home: string, state: ServerState): Promise<ImportReport> {
  const report: ImportReport = { tokens: 0, accounts: 0, conversations: 0, messages: 0, events: 0, tasks: 0, unchanged: 0 };
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
      if (problem) {
        throw new AtlasError(`cannot import ${files.record}: ${problem}`, { exitCode: EXIT.input, hint: 'repair or move that folder away, then run `atlas serve migrate` again (what was imported stays)' });
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
  if (state.backend === 'postgres') await copyEmbeddedState(home, state, report);
  return report;
}

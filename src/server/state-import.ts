// `atlas serve migrate`: brings a file-based server home (tokens.json, conversation folders, event
// logs, the task index) into the server state, and into PostgreSQL the embedded state's tokens too.
// Running it again adds only what is new; the files are left as they are, so nothing is lost if
// the import is stopped half-way.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { listConversations as listRuns, readMessages as readRunMessages } from '../conversation/read.js';
import { conversationFiles as runFiles } from '../conversation/paths.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, conversationsDir, listAccounts, listConversationFiles } from './conversation-store.js';
import { EVENTS_FILE_NAME, retiredIdPath } from './event-log.js';
import { parseLines } from './event-log-file.js';
import { openState, stateFilePath } from './state/open.js';
import type { ServerState, StoredMessage, TaskIndexRow } from './state/types.js';
import { logKey } from './state/types.js';
import { adoptTokenFile } from './server-state.js';
import { serverDir } from './token-file.js';

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

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function floorOf(logPath: string): number {
  const n = Number(readText(retiredIdPath(logPath))?.trim());
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Imports one events.jsonl (with the last id its removed predecessor used, if any). */
async function importLog(state: ServerState, log: string, path: string, report: ImportReport): Promise<void> {
  const events = parseLines(readText(path) ?? '');
  const floor = floorOf(path);
  if (events.length === 0 && floor === 0) return;
  const added = await state.importEvents(log, events, floor);
  report.events += added;
  report.unchanged += events.length - added;
}

function taskRecords(home: string): TaskIndexRow[] {
  const dir = join(serverDir(home), 'tasks');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => /^task-[0-9a-z-]+\.json$/.test(n));
  } catch {
    return [];
  }
  const rows: TaskIndexRow[] = [];
  for (const name of names) {
    try {
      const r = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Partial<TaskIndexRow>;
      const fields = [r.task_id, r.account, r.workspace, r.dir, r.repo, r.template, r.created_at];
      if (fields.every((f) => typeof f === 'string')) rows.push(r as TaskIndexRow);
    } catch {
      // A damaged record is not a task of this server (the server itself skips it too).
    }
  }
  return rows;
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
  const files = conversationFiles(home, account, c.id);
  // Each turn is one recorded run: its messages keep their run's id in their key, so two runs'
  // keys never collide, and their turn is the run's place in the order they started.
  const messages: StoredMessage[] = listRuns(files.dir).flatMap((run, i) =>
    readRunMessages(runFiles(files.dir, run.id).messages).map((m) => ({ ...m, key: `${run.id}:${m.key}`, conversation_id: c.id, account, turn: i + 1 })),
  );
  const had = (await state.listMessages(account, c.id)).length;
  await state.putMessages(messages);
  report.messages += Math.max(0, messages.length - had);
  report.unchanged += Math.min(had, messages.length);
  await importLog(state, logKey.conversation(account, c.id), files.events, report);
}

/**
 * Moving to PostgreSQL: the tokens the embedded state holds go along, revoked ones as revoked (so
 * an old tokens.json adopted later cannot bring them back).
 */
async function copyEmbeddedTokens(home: string, state: ServerState, report: ImportReport): Promise<void> {
  if (!existsSync(stateFilePath(home))) return;
  const embedded = await openState({ home, url: '' });
  try {
    for (const t of await embedded.allTokens()) {
      if (await state.addToken(t)) report.tokens++;
      else report.unchanged++;
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
  if (state.backend === 'postgres') await copyEmbeddedTokens(home, state, report);
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
    // Conversations removed before the import: their ids go on from where they stopped.
    const retired = join(conversationsDir(home, account), '.retired-event-ids');
    let removed: string[] = [];
    try {
      removed = readdirSync(retired);
    } catch {
      // None removed.
    }
    for (const id of removed) {
      if (!present.some((c) => c.id === id)) await importLog(state, logKey.conversation(account, id), join(conversationsDir(home, account), id, EVENTS_FILE_NAME), report);
    }
    await importLog(state, logKey.account(account), join(serverDir(home), 'accounts', account, EVENTS_FILE_NAME), report);
  }
  for (const task of taskRecords(home)) {
    if (await state.getTask(task.task_id)) report.unchanged++;
    else report.tasks++;
    await state.putTask(task);
    await importLog(state, logKey.task(task.task_id), join(task.dir, EVENTS_FILE_NAME), report);
  }
  return report;
}

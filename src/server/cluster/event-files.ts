// Event logs as an older atlas kept them, one events.jsonl per conversation, account and task:
// found, and brought into the server state with their ids (a removed conversation's last id too,
// so its id never repeats), by the import (state-import.ts) that `atlas serve migrate` runs and
// the state's first opening on a home does.

import { readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { conversationFolders, conversationsDir, listAccounts } from '../conversations/conversation-store.js';
import { EVENTS_FILE_NAME } from '../state/event-log.js';
import { parseLines, retiredIdPath } from '../state/event-log-file.js';
import { serverDir } from '../state/token-file.js';
import type { ServerState, TaskIndexRow } from '../state/types.js';
import { logKey } from '../state/types.js';

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

/** The task records of server/tasks/*.json (a damaged one is skipped, as the server skips it). */
export function taskRecordFiles(home: string): TaskIndexRow[] {
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
      // A file-based home served one machine: this one.
      if (fields.every((f) => typeof f === 'string'))
        rows.push({ ...(r as TaskIndexRow), host: typeof r.host === 'string' ? r.host : hostname() });
    } catch {
      // Not a task record.
    }
  }
  return rows;
}

/** Every events.jsonl of this home, with the log it belongs to (removed conversations' too). */
export function legacyLogFiles(home: string): { key: string; path: string }[] {
  const out: { key: string; path: string }[] = [];
  for (const account of listAccounts(home)) {
    const dir = conversationsDir(home, account);
    let retired: string[] = [];
    try {
      retired = readdirSync(join(dir, '.retired-event-ids'));
    } catch {
      // None removed.
    }
    for (const id of new Set([...conversationFolders(home, account), ...retired]))
      out.push({ key: logKey.conversation(account, id), path: join(dir, id, EVENTS_FILE_NAME) });
    out.push({ key: logKey.account(account), path: join(serverDir(home), 'accounts', account, EVENTS_FILE_NAME) });
  }
  for (const task of taskRecordFiles(home)) out.push({ key: logKey.task(task.task_id), path: join(task.dir, EVENTS_FILE_NAME) });
  return out;
}

/** Imports one events.jsonl (and its removed predecessor's last id): how many were new, how many there. */
export async function importLogFile(state: ServerState, key: string, path: string): Promise<{ added: number; present: number }> {
  const events = parseLines(readText(path) ?? '');
  const floor = floorOf(path);
  if (events.length === 0 && floor === 0) return { added: 0, present: 0 };
  const added = await state.importEvents(key, events, floor);
  return { added, present: events.length - added };
}

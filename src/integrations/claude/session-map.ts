// The global session → request map (seed 004): which request a session's events belong to when
// they carry no prompt_id, and where that session's requests live. One small JSON file per
// session under `$ATLAS_HOME/claude/sessions/`; changes are made under its lock because Claude
// Code runs the matching hooks of one event in parallel.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { withLock } from '../../store/lock.js';
import { safeId } from './event.js';
import { claudePaths } from './places.js';

export interface SessionEntry {
  session_id: string;
  /** The request the session's latest prompt opened. */
  request_id: string | null;
  /** Folder holding the session's requests. */
  base_dir: string;
  /** The task folder when a task owned the working directory at the session's start. */
  task_dir: string | null;
  task_id: string | null;
  workspace: string | null;
  cwd: string;
  started_at: string;
  /** True when atlas itself launched this Claude Code (its stream counts the tokens). */
  launched_by_atlas: boolean;
  ended_at?: string;
}

export function sessionEntryPath(home: string, sessionId: string): string {
  return join(claudePaths(home).sessionsDir, `${safeId(sessionId)}.json`);
}

export function readSessionEntry(home: string, sessionId: string): SessionEntry | undefined {
  try {
    const data = JSON.parse(readFileSync(sessionEntryPath(home, sessionId), 'utf8')) as SessionEntry;
    return typeof data.base_dir === 'string' && typeof data.session_id === 'string' ? data : undefined;
  } catch {
    return undefined;
  }
}

/** Read-modify-write of a session's entry under its lock; `change` sees undefined for a new one. */
export async function updateSessionEntry(
  home: string,
  sessionId: string,
  change: (entry: SessionEntry | undefined) => SessionEntry,
): Promise<SessionEntry> {
  const path = sessionEntryPath(home, sessionId);
  mkdirSync(claudePaths(home).sessionsDir, { recursive: true });
  return withLock(path, () => {
    const next = change(readSessionEntry(home, sessionId));
    writeFileAtomic(path, `${JSON.stringify(next, null, 2)}\n`, { durable: false });
    return next;
  });
}

// Which folder a session's requests belong to, and which request an event belongs to.
import { existsSync } from 'node:fs';
import { locateWorktree, realpath } from '../../git/locate.js';
import { resolveTask } from '../../hook/resolve-task.js';
import { readTask } from '../../store/task-store.js';
import type { ClaudeHookEvent } from './event.js';
import { taskRequestsBase, untaskedBase } from './places.js';
import type { SessionEntry } from './session-map.js';
import { readSessionEntry, updateSessionEntry } from './session-map.js';
import type { TaskLink } from './task-feed.js';

/** Request ids atlas makes when Claude Code sends no prompt_id: time plus randomness. */
export function generatedRequestId(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '')
    .replace('T', '-');
  return `req-${stamp}-${Math.random().toString(16).slice(2, 8).padEnd(6, '0')}`;
}

/** A fresh entry for a session: its task (the non-ended task owning cwd, strictly) or none. */
function freshEntry(event: ClaudeHookEvent, home: string, launched: boolean, at: string, previous?: SessionEntry): SessionEntry {
  const found = resolveTask({ cwd: event.cwd, home, strict: true });
  const root = locateWorktree(event.cwd)?.root ?? realpath(event.cwd);
  return {
    session_id: event.session_id,
    request_id: previous?.request_id ?? null,
    base_dir: found ? taskRequestsBase(found.ref.dir) : untaskedBase(home, root),
    task_dir: found?.ref.dir ?? null,
    task_id: found?.ref.id ?? null,
    workspace: found?.ref.workspace ?? null,
    cwd: event.cwd,
    started_at: previous?.started_at ?? at,
    launched_by_atlas: launched,
  };
}

/**
 * The session's entry, made on its first event (hooks installed mid-session included) and
 * re-resolved at each SessionStart (a resumed session may now be in a task's tree); a
 * UserPromptSubmit opens its request. All under the entry's lock.
 */
export async function sessionScope(event: ClaudeHookEvent, home: string, launched: boolean, now: Date): Promise<SessionEntry> {
  const at = now.toISOString();
  const prompt = event.hook_event_name === 'UserPromptSubmit';
  // A task folder removed since (atlas cleanup) is never written into again: resolve anew.
  const stale = (entry: SessionEntry | undefined) =>
    !entry || event.hook_event_name === 'SessionStart' || (entry.task_dir !== null && !existsSync(entry.task_dir));
  const existing = readSessionEntry(home, event.session_id);
  if (existing && !stale(existing) && !prompt) return existing;
  return updateSessionEntry(home, event.session_id, (entry) => {
    const next = stale(entry) ? freshEntry(event, home, launched, at, entry) : { ...entry! };
    if (prompt) next.request_id = event.prompt_id ?? generatedRequestId(now);
    return next;
  });
}

/** The request an event belongs to: its own prompt_id, else the session's latest request. */
export function requestIdOf(event: ClaudeHookEvent, entry: SessionEntry): string | undefined {
  if (event.hook_event_name === 'UserPromptSubmit') return entry.request_id ?? undefined;
  return event.prompt_id ?? entry.request_id ?? undefined;
}

export function taskLinkOf(entry: SessionEntry): TaskLink | undefined {
  if (!entry.task_dir || !entry.task_id || !entry.workspace || !existsSync(entry.task_dir)) return undefined;
  try {
    return { ref: { workspace: entry.workspace, id: entry.task_id, dir: entry.task_dir }, task: readTask(entry.task_dir) };
  } catch {
    return undefined;
  }
}

// The task's heartbeat from a Claude Code session, on every event (kept light: no hook.json, no
// HookManager). When no live process owns an active task, the session's Claude Code becomes its
// owner, so the task is not judged crashed while a person works in it; an owner atlas runs is
// left alone.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { HookState } from '../../domain/hook-state.js';
import type { Task } from '../../domain/task.js';
import { toTimestamp } from '../../domain/time.js';
import type { OwnerRecord } from '../../liveness/owner.js';
import { checkLiveness, readOwner, removeOwner, writeOwner } from '../../liveness/owner.js';
import { processStartIdentity } from '../../liveness/process-identity.js';
import { withLock } from '../../store/lock.js';
import { taskFiles } from '../../store/paths.js';
import type { TaskRef } from '../../store/task-store.js';

/** A session's owner record refreshes at most this often (every event would rewrite it). */
const HEARTBEAT_EVERY_MS = 5_000;
/** Claude Code's own pid is the proof of life; an idle person must not look hung. */
const SESSION_STALE_MS = 24 * 60 * 60 * 1000;
/** States in which a task expects someone to be working on it. */
const ACTIVE: ReadonlySet<HookState> = new Set(['initializing', 'step_pending', 'step_running', 'step_validating', 'recovering']);

export interface TaskLink {
  ref: TaskRef;
  task: Task;
}

/** task.json's status mirrors the hook's state (HookManager keeps them equal). */
export function currentStatus(link: TaskLink): HookState | undefined {
  try {
    return (JSON.parse(readFileSync(taskFiles(link.ref.dir).task, 'utf8')) as Task).status;
  } catch {
    return undefined;
  }
}

/** Claude Code's pid: the hook's nearest ancestor that is not a shell (Linux /proc). */
export function claudePid(): number | undefined {
  let pid = process.ppid;
  for (let depth = 0; depth < 4 && pid > 1; depth++) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!/^(?:sh|bash|dash|zsh|ash|busybox|env|timeout)$/.test(comm)) return pid;
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return depth === 0 ? process.ppid : undefined;
    }
  }
  return undefined;
}

type SessionOwner = OwnerRecord & { claude_session_id?: string };

/** Claims or refreshes the session's ownership of the task (see the top of this file). */
export async function sessionHeartbeat(link: TaskLink, sessionId: string, now = new Date()): Promise<'beat' | 'claimed' | 'skipped'> {
  const status = currentStatus(link);
  if (!status || !ACTIVE.has(status)) return 'skipped';
  const path = taskFiles(link.ref.dir).owner;
  const current = readOwner(path) as SessionOwner | undefined;
  const ours = current?.claude_session_id === sessionId;
  if (ours && now.getTime() - Date.parse(current!.heartbeat_at) < HEARTBEAT_EVERY_MS) return 'skipped';
  if (!ours && current && ['alive', 'remote'].includes(checkLiveness(current, now.getTime()).status)) return 'skipped';
  const pid = claudePid();
  if (!pid) return 'skipped';
  return withLock(path, () => {
    const again = readOwner(path) as SessionOwner | undefined;
    const stillOurs = again?.claude_session_id === sessionId;
    if (!stillOurs && again && ['alive', 'remote'].includes(checkLiveness(again, now.getTime()).status)) return 'skipped';
    const at = toTimestamp(now);
    const record: SessionOwner = stillOurs
      ? { ...again!, heartbeat_at: at }
      : {
          pid,
          host: hostname(),
          process_start: processStartIdentity(pid) ?? 'unknown',
          started_at: at,
          heartbeat_at: at,
          heartbeat_interval_ms: HEARTBEAT_EVERY_MS,
          stale_threshold_ms: SESSION_STALE_MS,
          claude_session_id: sessionId,
        };
    writeOwner(path, record);
    return stillOurs ? 'beat' : 'claimed';
  });
}

/** At SessionEnd: the session stops owning the task (only if it still does). */
export async function releaseSessionOwner(link: TaskLink, sessionId: string): Promise<boolean> {
  const path = taskFiles(link.ref.dir).owner;
  if ((readOwner(path) as SessionOwner | undefined)?.claude_session_id !== sessionId) return false;
  return withLock(path, () => {
    if ((readOwner(path) as SessionOwner | undefined)?.claude_session_id !== sessionId) return false;
    removeOwner(path);
    return true;
  });
}

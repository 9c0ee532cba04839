// Where the Claude Code integration keeps things. Requests of a session in a task's working tree
// live in the task's folder (`requests/<id>/`); any other session's under
// `$ATLAS_HOME/sessions/<repo>/<id>/`, never in the user's repository.
import { basename, join } from 'node:path';

export const REQUESTS_DIR_NAME = 'requests';
export const EVENTS_FILE_NAME = 'hook-events.jsonl';
export const STATE_FILE_NAME = '.state.json';
export const CONTEXT_FILE_NAME = 'context.md';

export function claudePaths(home: string) {
  const root = join(home, 'claude');
  return {
    root,
    /** The global session → request map: one small file per session. */
    sessionsDir: join(root, 'sessions'),
    /** Failures of the hook itself (I/O errors, bugs), one line each. */
    errorLog: join(root, 'hook-errors.log'),
    /** Settings files `atlas claude install` created (so uninstall can delete them again). */
    installs: join(root, 'installs.json'),
  };
}

/** FNV-1a, 32 bits: a short stable tag for a path (no node:crypto on the hook's hot path). */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** `$ATLAS_HOME/sessions/<repo name>-<hash of its path>`: two clones named alike stay apart. */
export function untaskedBase(home: string, repoRoot: string): string {
  const name =
    basename(repoRoot)
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .replace(/^\.+/, '_') || 'root';
  return join(home, 'sessions', `${name.slice(0, 60)}-${shortHash(repoRoot)}`);
}

export function taskRequestsBase(taskDir: string): string {
  return join(taskDir, REQUESTS_DIR_NAME);
}

export function requestFiles(dir: string) {
  return {
    dir,
    context: join(dir, CONTEXT_FILE_NAME),
    work: join(dir, 'work'),
    logs: join(dir, 'session-logs'),
    events: join(dir, EVENTS_FILE_NAME),
    state: join(dir, STATE_FILE_NAME),
  };
}

/** Events that arrive before the session's first prompt (SessionStart) are logged per session. */
export function sessionEventsFile(base: string, sessionId: string): string {
  return join(base, 'session-events', `${sessionId}.jsonl`);
}

// lifecycle.log: one JSON line per hook run, in the task's folder (docs/lifecycle-hooks.md).
// Appended with O_APPEND, one write per line, so concurrent writers never interleave a line and
// a crash loses at most the line being written.
import { appendFile, appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fsCall } from '../store/atomic-write-async.js';
import type { LifecyclePoint } from './types.js';
import { LIFECYCLE_POINTS } from './types.js';

export const LIFECYCLE_LOG_FILE_NAME = 'lifecycle.log';

export type HookRunOutcome = 'ok' | 'failed' | 'timeout';
/** builtin: atlas's own default; template / config: a user's command and where it came from. */
export type HookSource = 'builtin' | 'template' | 'config';

export interface LifecycleLogEntry {
  /** RFC 3339 UTC, when the run started. */
  at: string;
  point: LifecyclePoint;
  /** The command line, or the builtin's name. */
  hook: string;
  source: HookSource;
  task_id: string;
  step_name: string | null;
  conversation_id: string | null;
  duration_ms: number;
  outcome: HookRunOutcome;
  exit_code?: number;
  error?: string;
  stderr_tail?: string;
}

export function lifecycleLogPath(taskDir: string): string {
  return join(taskDir, LIFECYCLE_LOG_FILE_NAME);
}

export function appendLifecycleLog(taskDir: string, entry: LifecycleLogEntry): void {
  appendFileSync(lifecycleLogPath(taskDir), `${JSON.stringify(entry)}\n`);
}

/**
 * Lines for lifecycle.log kept until the end of the event loop's pass, then appended with one
 * write per folder from libuv's thread pool (a server's turn runs a builtin hook per message: an
 * open, write and close each would be the one thread's, waiting on a busy disk). A pass's lines are
 * appended after the previous pass's, so the log keeps their order. A crash loses at most the lines
 * not yet appended, as it would the events still waiting for their commit.
 */
export class LifecycleLogQueue {
  private readonly waiting = new Map<string, string>();
  private scheduled = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly failed: (error: unknown) => void) {}

  add(taskDir: string, entry: LifecycleLogEntry): void {
    this.waiting.set(taskDir, `${this.waiting.get(taskDir) ?? ''}${JSON.stringify(entry)}\n`);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  /** Appends what waits now; resolves once every line so far is in its log. */
  flush(): Promise<void> {
    this.scheduled = false;
    const batch = [...this.waiting];
    this.waiting.clear();
    if (batch.length > 0) {
      const append = ([dir, text]: [string, string]) =>
        fsCall((done) => appendFile(lifecycleLogPath(dir), text, (error) => done(error, undefined))).catch(this.failed);
      this.writing = this.writing.then(() => Promise.all(batch.map(append))).then(() => undefined);
    }
    return this.writing;
  }
}

function isEntry(v: unknown): v is LifecycleLogEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    typeof e['at'] === 'string' &&
    (LIFECYCLE_POINTS as readonly unknown[]).includes(e['point']) &&
    typeof e['hook'] === 'string' &&
    typeof e['duration_ms'] === 'number' &&
    (e['outcome'] === 'ok' || e['outcome'] === 'failed' || e['outcome'] === 'timeout')
  );
}

/** The log's entries in order; lines that are not entries (a torn last line) are counted, not thrown. */
export function readLifecycleLog(taskDir: string): { entries: LifecycleLogEntry[]; skipped: number } {
  const path = lifecycleLogPath(taskDir);
  if (!existsSync(path)) return { entries: [], skipped: 0 };
  const entries: LifecycleLogEntry[] = [];
  let skipped = 0;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (isEntry(parsed)) entries.push(parsed);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { entries, skipped };
}

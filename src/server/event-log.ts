// The append-only event log of a conversation or a task (events.jsonl in its folder): one JSON
// event a line, ids a sequence from 1 (continued after a removed folder's last id). A stream replays from the file after Last-Event-ID and then
// gets new events live; both happen in one tick, so nothing falls between them.
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { toTimestamp } from '../domain/time.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { readEventsAfter, readTail } from './event-log-file.js';

export interface StoredEvent {
  id: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export type Listener = (event: StoredEvent) => void;

export const EVENTS_FILE_NAME = 'events.jsonl';

/**
 * Where the folder holding a log's folder keeps, once that folder is removed, the last id it used:
 * a conversation deleted and made again goes on from there, so a client's Last-Event-ID neither
 * skips nor repeats events (issue 19, defect 7). Ids start with a letter or digit: no clash.
 */
export function retiredIdPath(logPath: string): string {
  return join(dirname(dirname(logPath)), '.retired-event-ids', basename(dirname(logPath)));
}

/** Records a log's last id before its folder is removed. */
export function retireLog(logPath: string): void {
  const { lastId } = readTail(logPath);
  const floor = Math.max(lastId, readFloor(logPath));
  if (floor === 0) return;
  mkdirSync(dirname(retiredIdPath(logPath)), { recursive: true, mode: 0o700 });
  writeFileAtomic(retiredIdPath(logPath), `${floor}\n`);
}

function readFloor(logPath: string): number {
  try {
    const n = Number(readFileSync(retiredIdPath(logPath), 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 ? n : 0;
  } catch {
    return 0;
  }
}

/**
 * Held only around one append: spins briefly (sync, so append stays synchronous) while another
 * process holds it. The lock is a file made with O_EXCL: creating and unlinking one costs a fifth
 * of a folder's mkdir and rmdir, and a busy server appends several events a turn.
 */
function withAppendLock<T>(path: string, fn: () => T): T {
  const lockPath = `${path}.lock`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      closeSync(openSync(lockPath, 'wx', 0o600));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        continue;
      }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A lock left by a killed process: an append takes microseconds, so a second-old lock is stale.
      try {
        if (Date.now() - statSync(lockPath).mtimeMs > STALE_LOCK_MS) rmSync(lockPath, { recursive: true, force: true });
      } catch {
        // Released meanwhile.
      }
      if (Date.now() > deadline) throw new Error(`could not lock ${basename(path)} to append an event`);
      Atomics.wait(SLEEPER, 0, 0, 1);
    }
  }
  try {
    return fn();
  } finally {
    try {
      unlinkSync(lockPath);
    } catch {
      // Taken away as stale by another process meanwhile: nothing left to release.
    }
  }
}

const STALE_LOCK_MS = 1_000;
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

export class EventLog {
  private last: number;
  private readonly listeners = new Set<Listener>();

  constructor(readonly path: string) {
    this.last = Math.max(readTail(path).lastId, readFloor(path));
  }

  /** The last id this process has seen (appended or read). */
  get lastId(): number {
    return this.last;
  }

  /** The file's last id now: another server sharing this home may have appended since. */
  readLastId(): number {
    this.last = Math.max(this.last, readTail(this.path).lastId);
    return this.last;
  }

  /**
   * Appends under a lock shared by every process on this ATLAS_HOME, with the id after the file's
   * own last one (never a cached counter): two servers on one home never hand out an id twice.
   */
  append(type: string, data: Record<string, unknown>): StoredEvent {
    const event = withAppendLock(this.path, () => {
      const tail = readTail(this.path);
      const id = Math.max(tail.lastId, tail.lastId === 0 ? readFloor(this.path) : 0) + 1;
      const e: StoredEvent = { id, type, at: toTimestamp(new Date()), data };
      appendFileSync(this.path, `${tail.torn ? '\n' : ''}${JSON.stringify(e)}\n`);
      return e;
    });
    this.last = Math.max(this.last, event.id);
    for (const l of [...this.listeners]) l(event);
    return event;
  }

  /** Events after `afterId`, from the file (what any process appended). */
  since(afterId: number): StoredEvent[] {
    const events = readEventsAfter(this.path, afterId);
    if (events.length > 0) this.last = Math.max(this.last, events[events.length - 1]!.id);
    return events;
  }

  /** Replays what came after `afterId` and subscribes to what comes next; returns the unsubscribe. */
  follow(afterId: number, listener: Listener): () => void {
    for (const e of this.since(afterId)) listener(e);
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get followers(): number {
    return this.listeners.size;
  }
}

/** One EventLog per file in this process, so appends and followers meet. */
export class EventLogs {
  private readonly logs = new Map<string, EventLog>();

  get(path: string): EventLog {
    let log = this.logs.get(path);
    if (!log) {
      log = new EventLog(path);
      this.logs.set(path, log);
    }
    return log;
  }

  forget(path: string): void {
    this.logs.delete(path);
  }
}

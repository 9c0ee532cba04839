// The append-only event log of a conversation or a task (events.jsonl in its folder): one JSON
// event a line, ids a sequence from 1. A stream replays from the file after Last-Event-ID and then
// gets new events live; both happen in one tick, so nothing falls between them.
import { appendFileSync, readFileSync } from 'node:fs';
import { toTimestamp } from '../domain/time.js';

export interface StoredEvent {
  id: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export type Listener = (event: StoredEvent) => void;

export const EVENTS_FILE_NAME = 'events.jsonl';

function parseLines(text: string): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    try {
      const e = JSON.parse(line) as StoredEvent;
      if (typeof e.id === 'number' && typeof e.type === 'string') events.push(e);
    } catch {
      // A torn last line (the process died mid-write) is skipped; the next append starts a new line.
    }
  }
  return events;
}

export class EventLog {
  private last: number;
  private readonly listeners = new Set<Listener>();
  private tornTail: boolean;

  constructor(readonly path: string) {
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // No log yet.
    }
    const events = parseLines(text);
    this.last = events.length > 0 ? events[events.length - 1]!.id : 0;
    this.tornTail = text.length > 0 && !text.endsWith('\n');
  }

  get lastId(): number {
    return this.last;
  }

  append(type: string, data: Record<string, unknown>): StoredEvent {
    const event: StoredEvent = { id: this.last + 1, type, at: toTimestamp(new Date()), data };
    appendFileSync(this.path, `${this.tornTail ? '\n' : ''}${JSON.stringify(event)}\n`);
    this.tornTail = false;
    this.last = event.id;
    for (const l of [...this.listeners]) l(event);
    return event;
  }

  /** Events after `afterId`, from the file. */
  since(afterId: number): StoredEvent[] {
    if (afterId >= this.last) return [];
    let text = '';
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return [];
    }
    return parseLines(text).filter((e) => e.id > afterId);
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

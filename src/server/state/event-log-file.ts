// The events.jsonl logs an older atlas kept, read to adopt them into the server state.
import { basename, dirname, join } from 'node:path';
import type { StoredEvent } from './event-log.js';

/**
 * Where an older atlas kept, once a log's folder was removed, the last id it used (so a
 * conversation made again went on from there): read to carry that id into the state.
 */
export function retiredIdPath(logPath: string): string {
  return join(dirname(dirname(logPath)), '.retired-event-ids', basename(dirname(logPath)));
}

function parseLine(line: string): StoredEvent | undefined {
  if (line.length === 0) return undefined;
  try {
    const e = JSON.parse(line) as StoredEvent;
    return typeof e.id === 'number' && typeof e.type === 'string' ? e : undefined;
  } catch {
    // A torn line (the process died mid-write) is skipped.
    return undefined;
  }
}

export function parseLines(text: string): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (const line of text.split('\n')) {
    const e = parseLine(line);
    if (e) events.push(e);
  }
  return events;
}

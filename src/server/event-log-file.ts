// The events.jsonl logs an older atlas kept, read to adopt them into the server state: the events
// of a file, and the last id from its tail without reading all of it (a cheap look at each file).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { StoredEvent } from './event-log.js';

/**
 * Where an older atlas kept, once a log's folder was removed, the last id it used (so a
 * conversation made again went on from there): read to carry that id into the state.
 */
export function retiredIdPath(logPath: string): string {
  return join(dirname(dirname(logPath)), '.retired-event-ids', basename(dirname(logPath)));
}

const CHUNK = 64 * 1024;
const TAIL_CHUNK = 4 * 1024;

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

function openLog(path: string): number | undefined {
  try {
    return openSync(path, 'r');
  } catch {
    return undefined;
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const n = readSync(fd, buffer, 0, length, position);
  return buffer.subarray(0, n);
}

const NL = 0x0a;

export interface LogTail {
  lastId: number;
  /** The file does not end with a newline (a torn write): the next append starts a new line. */
  torn: boolean;
}

/** The last complete event's id, read backwards from the end (bytes, so no character is split). */
export function readTail(path: string): LogTail {
  const fd = openLog(path);
  if (fd === undefined) return { lastId: 0, torn: false };
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return { lastId: 0, torn: false };
    const torn = readAt(fd, size - 1, 1)[0] !== NL;
    let end = size;
    let carry = Buffer.alloc(0);
    // The last line is usually short: start small, read more only when it is not.
    let chunk = TAIL_CHUNK;
    while (end > 0) {
      const start = Math.max(0, end - chunk);
      chunk = Math.min(CHUNK, chunk * 4);
      let bytes = Buffer.concat([readAt(fd, start, end - start), carry]);
      // Complete lines only: what precedes the first newline may continue in the chunk before.
      const first = start > 0 ? bytes.indexOf(NL) : -1;
      carry = first >= 0 ? bytes.subarray(0, first) : start > 0 ? bytes : Buffer.alloc(0);
      if (start > 0 && first < 0) {
        end = start;
        continue;
      }
      bytes = bytes.subarray(first + 1);
      const lines = bytes.toString('utf8').split('\n');
      for (let i = lines.length - 1; i >= 0; i--) {
        const e = parseLine(lines[i]!);
        if (e) return { lastId: e.id, torn };
      }
      end = start;
    }
    return { lastId: 0, torn };
  } finally {
    closeSync(fd);
  }
}

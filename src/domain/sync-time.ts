// A stored entry's modification time as a pull sets it (docs/sync.md#the-state-file-sandbox-state). Pure.
import type { FileEntry } from './sync-state.js';

/**
 * The time to give utimes for an entry (unix seconds, a double): exact to the microsecond. Node.js
 * takes a double and keeps microseconds, flooring, so the time is nudged half a microsecond up:
 * a double near 1.7e9 is within 240 ns of the value, and the floor lands on the stored microsecond.
 */
export function entryTime(entry: Pick<FileEntry, 'modified_at' | 'mtime_ns'>): number {
  const micros = Math.floor((entry.mtime_ns ?? 0) / 1000);
  return entry.modified_at + (micros + 0.5) / 1e6;
}

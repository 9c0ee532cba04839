// A state's entries by path. A state read from a file or a scan is in path order, and then the
// list itself answers by binary search (and at once for the next path, as plans ask in order)
// instead of a Map beside it, whose table at 100,000 entries is ~4 MB a sync holds to its end.
import type { FileEntry } from './sync-state.js';
import { searchPath, strictlyInPathOrder } from './sync-state.js';

/** Entries by path; clear() lets the caller drop them before the reader goes out of scope. */
export type EntriesByPath = ReadonlyMap<string, FileEntry> & { clear(): void };

export function entriesByPath(files: readonly FileEntry[]): EntriesByPath {
  return strictlyInPathOrder(files) ? new SortedEntries(files) : new Map(files.map((f) => [f.path, f]));
}

class SortedEntries implements EntriesByPath {
  /** Where the last path found was: the next one is tried first. */
  private last = -1;

  constructor(private files: readonly FileEntry[]) {}

  get size(): number {
    return this.files.length;
  }

  private find(path: string): number {
    const files = this.files;
    if (files[this.last + 1]?.path === path) return ++this.last;
    const found = searchPath(files.length, (i) => files[i]!.path, path);
    if (found >= 0) this.last = found;
    return found;
  }

  get(path: string): FileEntry | undefined {
    const i = this.find(path);
    return i < 0 ? undefined : this.files[i];
  }

  has(path: string): boolean {
    return this.find(path) >= 0;
  }

  clear(): void {
    this.files = [];
    this.last = -1;
  }

  forEach(visit: (entry: FileEntry, path: string, map: ReadonlyMap<string, FileEntry>) => void, thisArg?: unknown): void {
    for (const f of this.files) visit.call(thisArg, f, f.path, this);
  }

  *entries(): MapIterator<[string, FileEntry]> {
    for (const f of this.files) yield [f.path, f];
  }

  *keys(): MapIterator<string> {
    for (const f of this.files) yield f.path;
  }

  *values(): MapIterator<FileEntry> {
    yield* this.files;
  }

  [Symbol.iterator](): MapIterator<[string, FileEntry]> {
    return this.entries();
  }
}

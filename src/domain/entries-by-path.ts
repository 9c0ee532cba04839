// A state's entries by path. A state read from a file or a scan is in path order, and then the
// list itself answers by binary search (and at once for the next path, as plans ask in order)
// instead of a Map beside it, whose table at 100,000 entries is ~4 MB a sync holds to its end.
import type { FileEntry } from './sync-state.js';
import { positionsOf, strictlyInPathOrder } from './sync-state.js';

/** Entries by path; clear() lets the caller drop them before the reader goes out of scope. */
export type EntriesByPath = ReadonlyMap<string, FileEntry> & { clear(): void };

export function entriesByPath(files: readonly FileEntry[]): EntriesByPath {
  return strictlyInPathOrder(files) ? new ListedEntries(files) : new Map(files.map((f) => [f.path, f]));
}

/** Entries in strict path order, searched where they are. */
class ListedEntries implements EntriesByPath {
  private position: (path: string) => number;

  constructor(private files: readonly FileEntry[]) {
    this.position = positionsOf(files.length, (i) => files[i]!.path);
  }

  get size(): number {
    return this.files.length;
  }

  get(path: string): FileEntry | undefined {
    return this.files[this.position(path)];
  }

  has(path: string): boolean {
    return this.position(path) >= 0;
  }

  clear(): void {
    this.files = [];
    this.position = () => -1;
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

// What `atlas sync versions` checks of a version without reading its contents: each entry against
// the sizes of the store's blobs (one listing), and an empty entry against the hashes of no bytes.
// A torn entry (its size from one state of a file, its hashes from another) or a content the store
// no longer holds makes the version damaged: every pull of it would fail. Pure.
import type { FileEntry } from './sync-state.js';

const EMPTY_MD5 = 'd41d8cd98f00b204e9800998ecf8427e';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** What is wrong with one entry, given the blobs the store holds (by name, with their sizes). */
export function entryProblem(f: FileEntry, blobs: ReadonlyMap<string, { size: number }>): string | undefined {
  if (f.link !== undefined || f.sha256 === undefined) return undefined; // a link, or the old layout
  const empty = f.checksum === EMPTY_MD5 || f.sha256 === EMPTY_SHA256;
  if (f.size === 0) return empty ? undefined : 'has size 0 but the hashes of some bytes';
  if (empty) return `has size ${f.size} but the hashes of no bytes`;
  const pack = f.pack !== undefined ? blobs.get(f.pack) : undefined;
  if (pack)
    return f.offset! + f.size > pack.size ? `lies past the end of its pack (${f.offset! + f.size} > ${pack.size} bytes)` : undefined;
  // A pack pruning took apart: the content is a blob of its own.
  const own = blobs.get(f.sha256);
  if (own) return own.size === f.size ? undefined : `has size ${f.size} but its content is ${own.size} bytes`;
  return 'names a content the store does not hold';
}

/** The first few damaged entries of a version, as one problem; undefined when none is. */
export function manifestProblem(files: readonly FileEntry[], blobs: ReadonlyMap<string, { size: number }>): string | undefined {
  const found: string[] = [];
  let count = 0;
  for (const f of files) {
    const problem = entryProblem(f, blobs);
    if (problem === undefined) continue;
    if (++count <= 3) found.push(`${JSON.stringify(f.path)} ${problem}`);
  }
  return count === 0
    ? undefined
    : `has ${count} entr${count === 1 ? 'y' : 'ies'} no pull can restore: ${found.join('; ')}${count > 3 ? ` (and ${count - 3} more)` : ''}`;
}

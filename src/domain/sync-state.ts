// `.sandbox-state` (seeds 000 §2.1, 001 §7): the files a workspace or a stored version holds, with
// the MD5 of each. Pure: writing, validation of every path a store could send, exclusions, and
// entries paired and looked up by path; reading is sync-state-parse.ts.

export const STATE_FILE_NAME = '.sandbox-state';
export const STATE_FORMAT_VERSION = '1.0';

export interface FileEntry {
  /** Relative to the root, `/`-separated. */
  path: string;
  /** MD5 of the content, 32 lowercase hex. */
  checksum: string;
  size: number;
  /** Unix seconds. */
  modified_at: number;
  /**
   * The nanoseconds of the modification time past `modified_at` (1 to 999,999,999; absent: 0, or
   * a version of an older atlas), as the file system gave them. A pull sets them to the
   * microsecond, all Node.js can set (docs/sync.md#the-state-file-sandbox-state).
   */
  mtime_ns?: number;
  /**
   * SHA-256 of the content (64 lowercase hex): the key of its blob in the store. Absent in
   * versions stored before content addressing (their files sit under the version itself).
   */
  sha256?: string;
  /** Permission bits (e.g. 0o755); absent: the reader's default (0o644 less its umask). */
  mode?: number;
  /** A symbolic link: its target (checksum and size are those of the target's text). */
  link?: string;
  /**
   * A content kept in a pack (stored versions only, docs/sync.md#packs): the SHA-256 of the pack's
   * blob, and where the content starts in it (its length is `size`).
   */
  pack?: string;
  offset?: number;
}

export interface StateFile {
  version: string;
  /** Unix seconds; 0 while a pull is under way (so an interrupted pull is never taken as fresh). */
  last_synced_at: number;
  files: FileEntry[];
  /** Folders with nothing synced inside, so that they come back empty. */
  dirs?: string[];
  /**
   * Permission bits of the folders whose bits are not 0o755 (a 0700 folder stays private on every
   * machine), by path. Absent in versions of older atlas: their folders get the reader's default.
   */
  dir_modes?: Record<string, number>;
  /**
   * Modification times of the synced folders (unix seconds), by path, in a stored version: a pull
   * gives them back last (rsync -a). Absent in versions of older atlas: folders keep the pull's times.
   */
  dir_times?: Record<string, number>;
  /**
   * Files that are one file under several names (hard links), in a stored version: groups of
   * paths, each of two or more files of the same content. A pull links them again (rsync -aH);
   * absent in versions of older atlas, whose readers write each as a file of its own.
   */
  hardlinks?: string[][];
  /** The version this folder last pushed or pulled (local state only): the base of a push. */
  synced_version?: string;
  /**
   * A version stored by a push that was behind the store and changed files the store changed too:
   * the newest version it conflicts with. Such a version is never taken as the newest.
   */
  conflict_of?: string;
  /** The files changed on both sides, for people. */
  conflicts?: string[];
  /**
   * A version's manifest that names its contents by reference (docs/sync.md#the-state-file-sandbox-state):
   * an entry without `sha256` (and not a link) has the content of the entry at the same path in
   * this version, whose manifest is a full one. Resolved on reading: no code past versions.ts sees it.
   */
  sha256_from?: string;
  /**
   * The newest version the push saw and built on (stored versions only): what a concurrent push
   * has in common with it (docs/sync.md#concurrent-pushes). Absent in the first version of a tree.
   */
  parent?: string;
}

export type StateParse = { ok: true; state: StateFile } | { ok: false; kind: 'corrupt' | 'newer'; problem: string };

export function emptyState(): StateFile {
  return { version: STATE_FORMAT_VERSION, last_synced_at: 0, files: [] };
}

export const SHA256_PATTERN = /^[0-9a-f]{64}$/;

/** Entries in path order (code units, the same on every machine). */
export const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** Whether the entries are in path order with no path twice. */
export const strictlyInPathOrder = (files: readonly FileEntry[]) => files.every((f, i) => i === 0 || files[i - 1]!.path < f.path);

/**
 * Whether a path is listed among `files`: by bisection when they are in path order (as atlas scans
 * and writes them), with no set of every path (100,000 of them) beside the entries; else a table.
 */
export function pathLookup(files: readonly FileEntry[]): (path: string) => boolean {
  const position = positionsOf(files.length, (i) => files[i]!.path);
  return (path) => position(path) >= 0;
}

/** Where `path` is among `length` paths in strict path order (`pathAt(i)` the i-th), or -1. */
function searchPath(length: number, pathAt: (i: number) => string, path: string): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (pathAt(mid) < path) low = mid + 1;
    else high = mid;
  }
  return low < length && pathAt(low) === path ? low : -1;
}

/**
 * Where a path is among `length` paths (`pathAt(i)` the i-th), or -1. Paths in strict path order
 * are searched, the one after the last found tried first (a plan asks in order), with no table of
 * them beside the list; paths in another order get a table.
 */
export function positionsOf(length: number, pathAt: (i: number) => string): (path: string) => number {
  let sorted = true;
  for (let i = 1; i < length && sorted; i++) sorted = pathAt(i - 1) < pathAt(i);
  if (!sorted) {
    const index = new Map<string, number>();
    // A path listed twice answers with its last, as a Map made of the list would.
    for (let i = 0; i < length; i++) index.set(pathAt(i), i);
    return (path) => index.get(path) ?? -1;
  }
  let last = -1;
  return (path) => {
    if (last + 1 < length && pathAt(last + 1) === path) return ++last;
    const found = searchPath(length, pathAt, path);
    if (found >= 0) last = found;
    return found;
  };
}

/**
 * Calls `visit` with each entry of `mine` (and its index) and the entry of `theirs` at the same
 * path (if any), in the order of `mine`; returns how many distinct paths `theirs` has. Lists in
 * path order (as atlas scans and writes them) are walked side by side; others (a manifest written
 * by hand) through a map.
 */
export function pairByPath(
  mine: readonly FileEntry[],
  theirs: readonly FileEntry[],
  visit: (entry: FileEntry, there: FileEntry | undefined, index: number) => void,
): number {
  if (strictlyInPathOrder(mine) && strictlyInPathOrder(theirs)) {
    let j = 0;
    for (const [i, entry] of mine.entries()) {
      while (j < theirs.length && theirs[j]!.path < entry.path) j++;
      visit(entry, theirs[j]?.path === entry.path ? theirs[j] : undefined, i);
    }
    return theirs.length;
  }
  const byPath = new Map(theirs.map((f) => [f.path, f]));
  for (const [i, entry] of mine.entries()) visit(entry, byPath.get(entry.path), i);
  return byPath.size;
}

/** Every path of either list once: merged when both are in path order, else through a set. */
export function pathsOfBoth(a: readonly FileEntry[], b: readonly FileEntry[]): string[] {
  if (!strictlyInPathOrder(a) || !strictlyInPathOrder(b)) return [...new Set([...a.map((f) => f.path), ...b.map((f) => f.path)])];
  const paths: string[] = [];
  for (let i = 0, j = 0; i < a.length || j < b.length; ) {
    const x = a[i]?.path;
    const y = b[j]?.path;
    if (y === undefined || (x !== undefined && x < y)) paths.push(a[i++]!.path);
    else if (x === undefined || y < x) paths.push(b[j++]!.path);
    else {
      paths.push(x);
      i++;
      j++;
    }
  }
  return paths;
}

/** A version's entries split: what may be written, and the links that leave the folder (never written). */
export function splitOutsideLinks(files: FileEntry[]): { kept: FileEntry[]; outside: FileEntry[] } {
  // Most versions have no such link: the list itself, not a copy of 100,000 entries.
  if (!files.some((f) => f.link !== undefined && !linkStaysInside(f.path, f.link))) return { kept: files, outside: [] };
  const kept: FileEntry[] = [];
  const outside: FileEntry[] = [];
  for (const f of files) (f.link !== undefined && !linkStaysInside(f.path, f.link) ? outside : kept).push(f);
  return { kept, outside };
}

/**
 * The state as JSON, entries in path order, the seed's fields first. With `bySha256From`, the
 * entries it names are written without their `sha256` (a manifest naming contents by reference to
 * `state.sha256_from`; their pack and offset go with it). A folder's own state (`local`) never
 * says where contents are stored. Written by hand, in pieces of about 64 KB: 100,000 entries are
 * 20 MB of JSON, which a writer sends on (to a file, to gzip) without ever holding it whole.
 */
export function* stateChunks(
  state: StateFile,
  bySha256From?: (entry: FileEntry) => boolean,
  where: 'store' | 'local' = 'store',
): Generator<string> {
  // In path order already as atlas scans and reads them: no sorted copy of 100,000 entries.
  const files = strictlyInPathOrder(state.files) ? state.files : [...state.files].sort(byPath);
  let chunk = `{"version":${JSON.stringify(state.version)},"last_synced_at":${state.last_synced_at}`;
  if (state.sha256_from !== undefined) chunk += `,"sha256_from":${JSON.stringify(state.sha256_from)}`;
  if (state.parent !== undefined) chunk += `,"parent":${JSON.stringify(state.parent)}`;
  chunk += ',"files":[';
  // Each entry one flat string, joined once per 64 KiB (not a rope of a dozen pieces an entry); the
  // hashes are hex, checked when read or made by a digest, so they go in without JSON escaping.
  const parts: string[] = [chunk];
  let size = chunk.length;
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    let text = `${i === 0 ? '' : ','}{"path":${JSON.stringify(f.path)},"checksum":"${f.checksum}","size":${f.size},"modified_at":${f.modified_at}`;
    if (f.sha256 !== undefined && !(bySha256From?.(f) ?? false)) {
      text += `,"sha256":"${f.sha256}"`;
      if (f.pack !== undefined && where === 'store') text += `,"pack":"${f.pack}","offset":${f.offset}`;
    }
    if (f.mtime_ns !== undefined && f.mtime_ns > 0) text += `,"mtime_ns":${f.mtime_ns}`;
    if (f.mode !== undefined) text += `,"mode":${f.mode}`;
    if (f.link !== undefined) text += `,"link":${JSON.stringify(f.link)}`;
    text += '}';
    parts.push(text);
    size += text.length;
    if (size >= 65536) {
      yield parts.join('');
      parts.length = 0;
      size = 0;
    }
  }
  chunk = parts.join('');
  chunk += ']';
  if (state.dirs && state.dirs.length > 0) chunk += `,"dirs":${JSON.stringify([...state.dirs].sort())}`;
  if (state.dir_modes && Object.keys(state.dir_modes).length > 0) chunk += `,"dir_modes":${sortedRecord(state.dir_modes)}`;
  if (state.dir_times && Object.keys(state.dir_times).length > 0) chunk += `,"dir_times":${sortedRecord(state.dir_times)}`;
  if (state.hardlinks && state.hardlinks.length > 0) chunk += `,"hardlinks":${JSON.stringify(state.hardlinks)}`;
  if (state.synced_version !== undefined) chunk += `,"synced_version":${JSON.stringify(state.synced_version)}`;
  if (state.conflict_of !== undefined)
    chunk += `,"conflict_of":${JSON.stringify(state.conflict_of)},"conflicts":${JSON.stringify(state.conflicts ?? [])}`;
  yield `${chunk}}\n`;
}

export function serializeState(state: StateFile, bySha256From?: (entry: FileEntry) => boolean, where: 'store' | 'local' = 'store'): string {
  return [...stateChunks(state, bySha256From, where)].join('');
}

/** Where a content lives in a tree's blob area: `.blobs/ab/abcdef…` (two hex digits of fan-out, as git and restic). */
export function blobPath(sha256: string): string {
  return `${BLOB_AREA}/${sha256.slice(0, 2)}/${sha256}`;
}

export const BLOB_AREA = '.blobs';

/** The folder at the root where a pull writes its downloads before renaming them into place. */
export const TEMP_DIR_NAME = '.sandbox-state.tmp';

/**
 * The temp names a pull gives the files it writes, beside each target, until every content is
 * checked (`.sandbox-state.tmp.<pid>-<n>`, transfer/staging.ts).
 */
export const STAGED_TEMP_NAME = /^\.sandbox-state\.tmp\.\d+-\d+$/;

/** `.git` at any depth is never synced, nor written from a store; nor is a pull's staged temp file. */
export function isReservedName(name: string): boolean {
  return name === '.git' || STAGED_TEMP_NAME.test(name);
}

/**
 * Names atlas keeps for itself at the root only: the state, its lock, the pull's temp folder and
 * the atomic writer's temp files of the state (`..sandbox-state.<pid>.<stamp>.tmp`). A user's
 * `.sandbox-state-notes` or `sub/.sandbox-state`, or a file named like an old atlas temp file, is
 * the person's and is synced.
 */
export function isReservedRootName(name: string): boolean {
  return (
    name === STATE_FILE_NAME ||
    name === `${STATE_FILE_NAME}.lock` ||
    name === TEMP_DIR_NAME ||
    /^\.\.sandbox-state\.\d+\.[0-9a-z]+\.tmp$/.test(name)
  );
}

/** Why a path from a state file or a listing must not be written, or undefined when it is safe. */
export function pathProblem(path: string): string | undefined {
  if (path.length === 0) return 'empty path';
  if (path.includes('\0')) return 'contains a NUL byte';
  if (path.includes('\\')) return 'contains a backslash';
  // What Node reads from a name that is not UTF-8: the name on disk is another one, which no store
  // could give back (docs/sync.md: a name that cannot round-trip is refused at push).
  if (path.includes('\uFFFD')) return 'is not valid UTF-8 (or holds U+FFFD)';
  if (path.startsWith('/')) return 'is absolute';
  if (/^[A-Za-z]:/.test(path)) return 'starts with a drive letter';
  if (path.length > 4096) return 'is longer than 4096 characters';
  const segments = path.split('/');
  if (isReservedRootName(segments[0]!)) return `names ${segments[0]}, which atlas keeps for itself`;
  for (const segment of segments) {
    if (segment === '') return 'has an empty segment (//, or a trailing /)';
    if (segment === '.' || segment === '..') return `has a "${segment}" segment`;
    // A UTF-16 unit is at most 3 bytes of UTF-8: only a segment of more than 85 can pass 255 bytes.
    if (segment.length > 85 && Buffer.byteLength(segment) > 255) return 'has a segment longer than 255 bytes';
    if (isReservedName(segment)) return `names ${segment}, which atlas never syncs`;
  }
  return undefined;
}

export interface Refusal {
  path: string;
  problem: string;
}

/**
 * Whether a link at `path` pointing to `target` stays inside the root, read as text (as the
 * system resolves it from the link's folder): never absolute, never above the root, never into
 * `.git` or atlas's own names. Only such links are stored and restored.
 */
export function linkStaysInside(path: string, target: string): boolean {
  if (target.startsWith('/') || target.includes('\\') || target.includes('\0') || /^[A-Za-z]:/.test(target)) return false;
  const parts = path.split('/').slice(0, -1);
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') parts.push(segment);
    else if (parts.pop() === undefined) return false;
  }
  return !parts.some(isReservedName) && !(parts.length > 0 && isReservedRootName(parts[0]!));
}

/**
 * One `sync.exclude` pattern, gitignore-like: `*` and `?` stay inside a segment, `**` crosses
 * segments; a pattern without `/` matches a name at any depth; a trailing `/` matches folders only.
 */
export interface ExcludeRule {
  source: string;
  regex: RegExp;
  dirOnly: boolean;
  /** Matched against the whole relative path (the pattern has a `/`), else against the name. */
  anchored: boolean;
}

function globToRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      if (glob[i + 2] === '/') {
        out += '(?:.*/)?';
        i += 2;
      } else {
        out += '.*';
        i += 1;
      }
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return out;
}

export function compileExcludes(patterns: readonly string[]): ExcludeRule[] {
  return patterns
    .map((p) => p.trim())
    .filter((p) => p.length > 0 && !p.startsWith('#'))
    .map((source) => {
      let body = source;
      const dirOnly = body.endsWith('/');
      if (dirOnly) body = body.slice(0, -1);
      const anchored = body.includes('/');
      if (body.startsWith('/')) body = body.slice(1);
      return { source, regex: new RegExp(`^${globToRegex(body)}$`), dirOnly, anchored };
    });
}

/** Whether the entry at `relPath` (its own name last) is excluded; a walk prunes excluded folders. */
export function isExcluded(relPath: string, isDir: boolean, rules: readonly ExcludeRule[]): boolean {
  const name = relPath.slice(relPath.lastIndexOf('/') + 1);
  if (isReservedName(name) || (name === relPath && isReservedRootName(name))) return true;
  for (const rule of rules) {
    if (rule.dirOnly && !isDir) continue;
    if (rule.regex.test(rule.anchored ? relPath : name)) return true;
  }
  return false;
}

/** A record of numbers by path as JSON, in path order (the same text for the same record). */
function sortedRecord(record: Record<string, number>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1))));
}

// Reading `.sandbox-state` (a folder's own, or a stored version's manifest): structure and every
// field checked (a store's manifest is hostile); whether the paths are safe to write is
// `unsafeEntries`'s job. Entries are parsed one at a time from text that may arrive in pieces, so
// a 100,000-file state is never held whole as text beside its entries, and an entry the caller
// already holds (the folder's own state) is taken in place of an equal one: one object, not two.
import { PACK_BELOW } from './sync-pack.js';
import { VERSION_PATTERN } from './sync-plan.js';
import { markStandIn, mayStandIn, sameOwnFields, takePlace } from './sync-stand-in.js';
import type { FileEntry, StateFile, StateParse } from './sync-state.js';
import { SHA256_PATTERN, STATE_FORMAT_VERSION } from './sync-state.js';

export interface ParseOptions {
  /**
   * A folder's own state, which never says where contents are stored: one that does was not
   * written by atlas, and where it points is not trusted.
   */
  local?: boolean;
  /**
   * Entries already held, by path. One equal to a parsed entry is used in its place, and takes the
   * parsed entry's place in a pack when it has none; otherwise the parsed entry shares its strings.
   * In a manifest that refers to a base, one that says the same as an entry leaving its SHA-256 to
   * the base stands in for it until the base is read (sync-stand-in.ts).
   */
  known?: ReadonlyMap<string, FileEntry>;
  /**
   * Each entry as it is checked, instead of kept (the state's `files` stays empty): a base
   * read only to be merged into the manifest that refers to it is never held whole.
   */
  each?: (entry: FileEntry) => void;
}

type Raw = Record<string, unknown>;

const MD5_PATTERN = /^[0-9a-f]{32}$/;
/** Between two entries, as atlas writes them: in valid JSON this never lies inside a string. */
const BETWEEN = '},{"path":';
const FILES_KEY = '"files":[';

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

const corrupt = (problem: string): StateParse => ({ ok: false, kind: 'corrupt', problem });

/** The whole text at once: any JSON layout (an older atlas's, or one written by hand). */
export function parseWhole(text: string, options: ParseOptions = {}): StateParse {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return corrupt(`not valid JSON (${(error as Error).message})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return corrupt('not a JSON object');
  const raw = data as Raw;
  const header = checkHeader(raw);
  if ('ok' in header) return header;
  if (!Array.isArray(raw['files'])) return corrupt('"files" is not a list');
  const entries = new Entries(options);
  entries.refers = raw['sha256_from'] !== undefined;
  for (const item of raw['files'] as unknown[]) {
    const problem = entries.add(item);
    if (problem !== undefined) return corrupt(problem);
  }
  return finish({ ...header, files: entries.files }, raw);
}

/**
 * The text in pieces, laid out as atlas writes it (`stateChunks`): the fields before `"files"`,
 * then one entry after another, each parsed as it is complete. Undefined when the text is laid out
 * otherwise (valid or not): the caller then parses it whole (`parseWhole`), which decides.
 */
export function parseStateChunks(chunks: Iterable<string>, options: ParseOptions = {}): StateParse | undefined {
  const reader = new StateReader(options);
  for (const chunk of chunks) if (!reader.push(chunk)) return reader.result;
  return reader.end();
}

/** `parseStateChunks` for pieces that arrive over time (a file or a download read as it comes). */
export async function parseStateStream(chunks: AsyncIterable<string>, options: ParseOptions = {}): Promise<StateParse | undefined> {
  const reader = new StateReader(options);
  for await (const chunk of chunks) if (!reader.push(chunk)) return reader.result;
  return reader.end();
}

/**
 * How much text a state may hold for its entries: a megabyte for the fields around the list, and
 * 64 KiB an entry (its longest path and link, escaped, fill a tenth of that). A store's manifest of
 * 4 GiB of whitespace (4 MB gzipped) stops at the first megabyte, not after minutes of inflating.
 */
const TEXT_BASE = 1024 * 1024;
const TEXT_PER_ENTRY = 64 * 1024;

/**
 * The whole text of a state not laid out as atlas writes it, refused as soon as it is longer than
 * its entries (counted by their `"path"` keys) can need.
 */
export async function cappedText(chunks: AsyncIterable<string>): Promise<{ text: string } | { problem: string }> {
  const parts: string[] = [];
  let [length, entries, tail] = [0, 0, ''];
  for await (const chunk of chunks) {
    // A key cut in two pieces is counted too: the end of the last piece is searched again.
    const seen = tail + chunk;
    entries += countOf(seen, '"path"') - countOf(tail, '"path"');
    tail = seen.slice(-5);
    parts.push(chunk);
    length += chunk.length;
    if (length > TEXT_BASE + entries * TEXT_PER_ENTRY) {
      return {
        problem: `its text is longer than ${length} characters for ${entries} entries (a state needs at most 64 KiB an entry): not a state atlas wrote, reading stopped`,
      };
    }
  }
  return { text: parts.join('') };
}

function countOf(text: string, key: string): number {
  let n = 0;
  for (let at = text.indexOf(key); at >= 0; at = text.indexOf(key, at + key.length)) n++;
  return n;
}

/** The state of one reading: what is not yet parsed, and the entries so far. */
class StateReader {
  /** Set once the reading is decided before the end (a problem, or not atlas's layout). */
  result: StateParse | undefined;
  private buffer = '';
  private header: Pick<StateFile, 'version' | 'last_synced_at'> | undefined;
  private headRaw: Raw | undefined;
  private readonly entries: Entries;

  constructor(options: ParseOptions) {
    this.entries = new Entries(options);
  }

  /** Takes the next piece; false when the reading is decided (see `result`). */
  push(chunk: string): boolean {
    this.buffer += chunk;
    if (this.headRaw === undefined) {
      const at = this.buffer.indexOf(FILES_KEY);
      if (at < 0) return this.buffer.length <= TEXT_BASE;
      const head = parseObject(`${this.buffer.slice(0, at + FILES_KEY.length)}]}`);
      if (head === undefined || typeof head['version'] !== 'string' || head['last_synced_at'] === undefined) return false;
      const header = checkHeader(head);
      if ('ok' in header) {
        this.result = header;
        return false;
      }
      [this.headRaw, this.header] = [head, header];
      this.entries.refers = head['sha256_from'] !== undefined;
      this.buffer = this.buffer.slice(at + FILES_KEY.length);
    }
    // Every entry followed by another is complete, and those are parsed together (one JSON.parse
    // per piece, not per entry); the last waits for the end of the text.
    const end = this.buffer.lastIndexOf(BETWEEN);
    // More text than one entry can need without a whole entry: not atlas's layout (`cappedText` decides).
    if (end < 0) return this.buffer.length <= TEXT_BASE + TEXT_PER_ENTRY;
    // A valid array only when every cut lies between two entries of the list (not inside one, nor a string).
    const items = jsonOf(`[${this.buffer.slice(0, end + 1)}]`);
    if (!Array.isArray(items)) return false;
    for (const item of items) {
      const problem = this.entries.add(item);
      if (problem !== undefined) {
        this.result = corrupt(problem);
        return false;
      }
    }
    this.buffer = this.buffer.slice(end + 2);
    return true;
  }

  /** The reading, once every piece was pushed. */
  end(): StateParse | undefined {
    if (this.headRaw === undefined || this.header === undefined) return undefined;
    const rest = lastEntryAndRest(this.buffer);
    if (rest === undefined) return undefined;
    if (rest.last !== undefined) {
      const problem = this.entries.add(rest.last);
      if (problem !== undefined) return corrupt(problem);
    }
    return finish({ ...this.header, files: this.entries.files }, { ...this.headRaw, ...rest.raw });
  }
}

/** The value of a JSON text, or undefined when it is not JSON. */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A JSON object, or undefined when the text is not one. */
function parseObject(text: string): Raw | undefined {
  const value = jsonOf(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Raw) : undefined;
}

/**
 * What follows the last separator: the last entry (none in an empty list), `]`, and the fields
 * after the list. `}]` may also sit inside a string, so each place it occurs is tried in turn;
 * valid JSON has one reading, and the first place where both halves parse is it.
 */
function lastEntryAndRest(text: string): { last?: Raw; raw: Raw } | undefined {
  if (text.startsWith(']')) {
    const raw = restOf(text.slice(1));
    return raw && { raw };
  }
  // A bound on the tries: text made to hold `}]` many times is read whole instead.
  let tries = 0;
  for (let at = text.indexOf('}]'); at >= 0 && tries++ < 64; at = text.indexOf('}]', at + 1)) {
    const last = parseObject(text.slice(0, at + 1));
    if (last === undefined) continue;
    const raw = restOf(text.slice(at + 2));
    if (raw !== undefined) return { last, raw };
  }
  return undefined;
}

/** The fields after the list (`,"dirs":[…]…}` or `}`); a second "files" is not atlas's layout. */
function restOf(text: string): Raw | undefined {
  const tail = text.trimEnd();
  if (tail === '}') return {};
  if (!tail.startsWith(',')) return undefined;
  const raw = parseObject(`{${tail.slice(1)}`);
  return raw === undefined || 'files' in raw ? undefined : raw;
}

function checkHeader(raw: Raw): StateParse | Pick<StateFile, 'version' | 'last_synced_at'> {
  if (typeof raw['version'] !== 'string') return corrupt('no "version"');
  const major = Number(/^(\d+)\./.exec(raw['version'])?.[1] ?? NaN);
  if (!Number.isInteger(major)) return corrupt(`unknown version ${JSON.stringify(raw['version'])}`);
  if (major > Number(STATE_FORMAT_VERSION.split('.')[0])) {
    return {
      ok: false,
      kind: 'newer',
      problem: `state format ${raw['version']} is newer than this atlas understands (${STATE_FORMAT_VERSION})`,
    };
  }
  if (!isCount(raw['last_synced_at'])) return corrupt('"last_synced_at" is not unix seconds');
  return { version: raw['version'], last_synced_at: raw['last_synced_at'] };
}

/** The entries of one state as they are checked, in order. */
class Entries {
  readonly files: FileEntry[] = [];
  /** The state refers to a base (`sha256_from`): its entries without a SHA-256 take the base's. */
  refers = false;
  private count = 0;
  /** One string per pack, not one per entry that names it (a pack holds hundreds of contents). */
  private readonly packs = new Map<string, string>();

  constructor(private readonly options: ParseOptions) {}

  /** Checks one item and keeps it; what is wrong with it otherwise. */
  add(item: unknown): string | undefined {
    const i = this.count;
    const f = item as Raw | null;
    if (typeof f !== 'object' || f === null) return `files[${i}] is not an object`;
    if (typeof f['path'] !== 'string') return `files[${i}].path is not text`;
    if (typeof f['checksum'] !== 'string' || !MD5_PATTERN.test(f['checksum']))
      return `files[${i}].checksum is not an MD5 (32 lowercase hex)`;
    if (!isCount(f['size']) || !isCount(f['modified_at'])) return `files[${i}] has a bad size or modified_at`;
    const problem = extrasProblem(f, i, this.options.local === true);
    if (problem !== undefined) return problem;
    if (typeof f['pack'] === 'string') {
      const known = this.packs.get(f['pack']);
      if (known === undefined) this.packs.set(f['pack'], f['pack']);
      else f['pack'] = known;
    }
    // The parsed object itself, checked: a copy per entry would be a second 100,000 objects. But one
    // that leaves its SHA-256 to its base (given it, and its place in a pack, by the merge) is either
    // the folder's entry standing in for it (one object for both), or made anew with room for what
    // the merge gives it: fields added to an object later go to a second block of fields (3.8 MB
    // more at 100,000 entries), and the parsed one dies young.
    const held = this.options.known?.get(f['path']);
    const leavesToBase = f['sha256'] === undefined && f['link'] === undefined && this.options.local !== true;
    const standIn = leavesToBase && this.refers && this.options.each === undefined && held !== undefined && mayStandIn(held, f);
    const entry = standIn ? held : shared(leavesToBase ? withRoom(f) : (f as unknown as FileEntry), held);
    this.count++;
    if (this.options.each) this.options.each(entry);
    else {
      if (standIn) markStandIn(this.files, this.files.length);
      this.files.push(entry);
    }
    return undefined;
  }
}

/** A stored entry without its SHA-256, in an object with a field for each thing the merge gives it. */
function withRoom(f: Raw): FileEntry {
  return {
    path: f['path'] as string,
    checksum: f['checksum'] as string,
    size: f['size'] as number,
    modified_at: f['modified_at'] as number,
    mtime_ns: f['mtime_ns'] as number | undefined,
    mode: f['mode'] as number | undefined,
    sha256: undefined,
    pack: undefined,
    offset: undefined,
  };
}

/** `held` (the folder's entry at its path) when it says the same, else the parsed one with its strings. */
function shared(f: FileEntry, held: FileEntry | undefined): FileEntry {
  if (held === undefined) return f;
  const same = sameAsHeld(held, f);
  if (same !== undefined) return same;
  f.path = held.path;
  if (held.checksum === f.checksum) f.checksum = held.checksum;
  if (f.sha256 !== undefined && f.sha256 === held.sha256) f.sha256 = held.sha256;
  return f;
}

/**
 * `held` (an entry of the folder's own state) when `f` says exactly the same of its path, given
 * `f`'s place in a pack when `held` has none; else undefined.
 */
function sameAsHeld(held: FileEntry, f: FileEntry): FileEntry | undefined {
  const same = sameOwnFields(held, f) && held.sha256 === f.sha256 && held.link === f.link;
  return same && takePlace(held, f.pack, f.offset) ? held : undefined;
}

/** What is wrong with the optional fields of an entry (all checked: a store's manifest is hostile). */
function extrasProblem(f: Raw, i: number, local: boolean): string | undefined {
  if (f['sha256'] !== undefined && (typeof f['sha256'] !== 'string' || !SHA256_PATTERN.test(f['sha256'])))
    return `files[${i}].sha256 is not a SHA-256 (64 lowercase hex)`;
  if (f['pack'] !== undefined || f['offset'] !== undefined) {
    if (local) return `files[${i}] says where its content is stored, which a folder's own state never does`;
    if (typeof f['pack'] !== 'string' || !SHA256_PATTERN.test(f['pack']) || !isCount(f['offset']))
      return `files[${i}] has a bad pack or offset (a SHA-256 and a byte count, both or neither)`;
    if (f['sha256'] === undefined) return `files[${i}] is in a pack but has no sha256`;
    // Only small contents are packed: a reader never reads more than that for one entry.
    if (typeof f['size'] === 'number' && f['size'] >= PACK_BELOW) return `files[${i}] is in a pack but is not under ${PACK_BELOW} bytes`;
  }
  if (f['mode'] !== undefined && (!isCount(f['mode']) || f['mode'] > 0o777)) return `files[${i}].mode is not permission bits (0 to 0o777)`;
  if (f['mtime_ns'] !== undefined && (!isCount(f['mtime_ns']) || f['mtime_ns'] >= 1e9))
    return `files[${i}].mtime_ns is not nanoseconds of a second (0 to 999999999)`;
  if (f['link'] !== undefined) {
    if (typeof f['link'] !== 'string' || f['link'].length === 0 || f['link'].length > 4096 || f['link'].includes('\0'))
      return `files[${i}].link is not a link target`;
    if (f['sha256'] !== undefined) return `files[${i}] is both a link and a blob`;
  }
  return undefined;
}

/** The fields besides the entries: folders, a conflict's record, the versions it names. */
function finish(state: StateFile, raw: Raw): StateParse {
  if (raw['dirs'] !== undefined) {
    if (!Array.isArray(raw['dirs']) || !raw['dirs'].every((d) => typeof d === 'string')) return corrupt('"dirs" is not a list of paths');
    state.dirs = raw['dirs'] as string[];
  }
  if (raw['dir_modes'] !== undefined) {
    const modes = raw['dir_modes'];
    if (typeof modes !== 'object' || modes === null || Array.isArray(modes) || !Object.values(modes).every((m) => isCount(m) && m <= 0o777))
      return corrupt('"dir_modes" is not folder paths with permission bits (0 to 0o777)');
    state.dir_modes = modes as Record<string, number>;
  }
  if (raw['dir_times'] !== undefined) {
    const times = raw['dir_times'];
    if (typeof times !== 'object' || times === null || Array.isArray(times) || !Object.values(times).every(isCount))
      return corrupt('"dir_times" is not folder paths with unix seconds');
    state.dir_times = times as Record<string, number>;
  }
  if (raw['hardlinks'] !== undefined) {
    const groups = raw['hardlinks'];
    if (!Array.isArray(groups) || !groups.every((g) => Array.isArray(g) && g.length >= 2 && g.every((p) => typeof p === 'string')))
      return corrupt('"hardlinks" is not a list of groups of two or more paths');
    state.hardlinks = groups as string[][];
  }
  if (raw['conflict_of'] !== undefined) {
    if (typeof raw['conflict_of'] !== 'string' || !VERSION_PATTERN.test(raw['conflict_of']))
      return corrupt('"conflict_of" is not a version name');
    state.conflict_of = raw['conflict_of'];
    state.conflicts = Array.isArray(raw['conflicts'])
      ? (raw['conflicts'] as unknown[]).filter((c): c is string => typeof c === 'string')
      : [];
  }
  for (const field of ['sha256_from', 'parent', 'synced_version'] as const) {
    const value = raw[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !VERSION_PATTERN.test(value)) return corrupt(`"${field}" is not a version name`);
    state[field] = value;
  }
  return { ok: true, state };
}

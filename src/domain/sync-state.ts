// `.sandbox-state` (seeds 000 §2.1, 001 §7): the files a workspace or a stored version holds, with
// the MD5 of each. Pure: parsing, validation of every path a store could send, exclusions.

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
}

export interface StateFile {
  version: string;
  /** Unix seconds; 0 while a pull is under way (so an interrupted pull is never taken as fresh). */
  last_synced_at: number;
  files: FileEntry[];
}

export type StateParse =
  | { ok: true; state: StateFile }
  | { ok: false; kind: 'corrupt' | 'newer'; problem: string };

export function emptyState(): StateFile {
  return { version: STATE_FORMAT_VERSION, last_synced_at: 0, files: [] };
}

const MD5_PATTERN = /^[0-9a-f]{32}$/;

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/** Structure only; whether the paths are safe to write is `unsafeEntries`'s job. */
export function parseStateFile(text: string): StateParse {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, kind: 'corrupt', problem: `not valid JSON (${(error as Error).message})` };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { ok: false, kind: 'corrupt', problem: 'not a JSON object' };
  const raw = data as Record<string, unknown>;
  if (typeof raw['version'] !== 'string') return { ok: false, kind: 'corrupt', problem: 'no "version"' };
  const major = Number(/^(\d+)\./.exec(raw['version'])?.[1] ?? NaN);
  if (!Number.isInteger(major)) return { ok: false, kind: 'corrupt', problem: `unknown version ${JSON.stringify(raw['version'])}` };
  if (major > Number(STATE_FORMAT_VERSION.split('.')[0])) {
    return { ok: false, kind: 'newer', problem: `state format ${raw['version']} is newer than this atlas understands (${STATE_FORMAT_VERSION})` };
  }
  if (!isCount(raw['last_synced_at'])) return { ok: false, kind: 'corrupt', problem: '"last_synced_at" is not unix seconds' };
  if (!Array.isArray(raw['files'])) return { ok: false, kind: 'corrupt', problem: '"files" is not a list' };
  const files: FileEntry[] = [];
  for (const [i, item] of (raw['files'] as unknown[]).entries()) {
    const f = item as Record<string, unknown> | null;
    if (typeof f !== 'object' || f === null) return { ok: false, kind: 'corrupt', problem: `files[${i}] is not an object` };
    if (typeof f['path'] !== 'string') return { ok: false, kind: 'corrupt', problem: `files[${i}].path is not text` };
    if (typeof f['checksum'] !== 'string' || !MD5_PATTERN.test(f['checksum'])) {
      return { ok: false, kind: 'corrupt', problem: `files[${i}].checksum is not an MD5 (32 lowercase hex)` };
    }
    if (!isCount(f['size']) || !isCount(f['modified_at'])) return { ok: false, kind: 'corrupt', problem: `files[${i}] has a bad size or modified_at` };
    files.push({ path: f['path'], checksum: f['checksum'], size: f['size'], modified_at: f['modified_at'] });
  }
  return { ok: true, state: { version: raw['version'], last_synced_at: raw['last_synced_at'], files } };
}

export function serializeState(state: StateFile): string {
  const files = [...state.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return `${JSON.stringify({ version: state.version, last_synced_at: state.last_synced_at, files })}\n`;
}

/** Names atlas keeps for itself at any depth: never synced, never written from a store. */
export function isReservedName(name: string): boolean {
  return name === '.git' || name.startsWith(STATE_FILE_NAME) || /^\.atlas-sync-.*\.tmp$/.test(name);
}

/** Why a path from a state file or a listing must not be written, or undefined when it is safe. */
export function pathProblem(path: string): string | undefined {
  if (path.length === 0) return 'empty path';
  if (path.includes('\0')) return 'contains a NUL byte';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('/')) return 'is absolute';
  if (/^[A-Za-z]:/.test(path)) return 'starts with a drive letter';
  if (path.length > 4096) return 'is longer than 4096 characters';
  for (const segment of path.split('/')) {
    if (segment === '') return 'has an empty segment (//, or a trailing /)';
    if (segment === '.' || segment === '..') return `has a "${segment}" segment`;
    if (Buffer.byteLength(segment) > 255) return 'has a segment longer than 255 bytes';
    if (isReservedName(segment)) return `names ${segment}, which atlas never syncs`;
  }
  return undefined;
}

export interface Refusal {
  path: string;
  problem: string;
}

/** Entries a hostile or damaged state could use to write outside the root or over each other. */
export function unsafeEntries(files: readonly FileEntry[]): Refusal[] {
  const refusals: Refusal[] = [];
  const seen = new Set<string>();
  for (const f of files) {
    const problem = pathProblem(f.path);
    if (problem) refusals.push({ path: f.path, problem });
    else if (seen.has(f.path)) refusals.push({ path: f.path, problem: 'is listed twice' });
    seen.add(f.path);
  }
  for (const f of files) {
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (seen.has(parent)) {
        refusals.push({ path: f.path, problem: `needs ${parent} to be a folder, but ${parent} is also listed as a file` });
        break;
      }
    }
  }
  return refusals;
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
  if (isReservedName(name)) return true;
  for (const rule of rules) {
    if (rule.dirOnly && !isDir) continue;
    if (rule.regex.test(rule.anchored ? relPath : name)) return true;
  }
  return false;
}

// The workspace as a list of FileEntry: a walk that skips .git, atlas's own files and
// `sync.exclude`; files with their MD5 (the seed's checksum) and SHA-256 (their blob's key), both
// from one read and reused from the last state only when nothing can have changed; modes; links
// that stay inside the folder; folders with nothing synced inside.

import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { EntriesByPath } from '../../domain/entries-by-path.js';
import { entriesByPath } from '../../domain/entries-by-path.js';
import type { ExcludeRule, FileEntry, StateFile } from '../../domain/sync-state.js';
import { byPath as inPathOrder, isExcluded, linkStaysInside } from '../../domain/sync-state.js';
import { isSandboxStubFile } from '../../exec/sandbox/litter.js';
import { hashFile } from './file-hash.js';
import { mapPool } from './pool.js';

export interface ScanResult {
  /** Files and the links that stay inside the folder, sorted by path. */
  files: FileEntry[];
  /** Links pointing outside the folder: never synced (what they point to is not the workspace's). */
  symlinks: string[];
  /** Named pipes, sockets and devices: no content a store could hold, never synced. */
  specials: string[];
  /** Files and folders this process may not read (a push refuses to store the folder without them). */
  unreadable: string[];
  /** Folders with nothing synced inside. */
  dirs: string[];
  /** Permission bits of the folders whose bits are not 0o755, by path (StateFile.dir_modes). */
  dir_modes: Record<string, number>;
  /** Modification times of every synced folder, by path (StateFile.dir_times). */
  dir_times: Record<string, number>;
  /** Files that are one file under several names (StateFile.hardlinks): groups of paths. */
  hardlinks: string[][];
  /** Names that are not UTF-8: Node cannot even open them by the name it reads (a push refuses them). */
  badNames: string[];
  bytesHashed: number;
}

export const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * The entry recorded by the last sync still holds when size and mtime match and the mtime is
 * before that sync: a write after it would carry a later mtime.
 */
export function cachedEntry(
  previous: StateFile | undefined,
  byPath: ReadonlyMap<string, FileEntry>,
  path: string,
  size: number,
  mtimeS: number,
): FileEntry | undefined {
  const known = byPath.get(path);
  if (!previous || !known || previous.last_synced_at === 0 || known.link !== undefined) return undefined;
  return known.size === size && known.modified_at === mtimeS && mtimeS < previous.last_synced_at ? known : undefined;
}

interface Found {
  path: string;
  size: number;
  mtimeS: number;
  /** The nanoseconds past mtimeS. */
  ns: number;
  mode: number;
}

/** A link as an entry: its checksum and size are its target's text's. */
export function linkEntry(path: string, target: string, mtimeS: number, ns = 0): FileEntry {
  const text = Buffer.from(target);
  return {
    path,
    checksum: createHash('md5').update(text).digest('hex'),
    size: text.length,
    modified_at: mtimeS,
    ...(ns > 0 ? { mtime_ns: ns } : {}),
    link: target,
  };
}

/** A time in nanoseconds (a bigint stat's) as whole seconds and the nanoseconds past them. */
function splitNs(ns: bigint): { mtimeS: number; ns: number } {
  const second = ns >= 0n ? ns / 1_000_000_000n : (ns - 999_999_999n) / 1_000_000_000n;
  return { mtimeS: Number(second), ns: Number(ns - second * 1_000_000_000n) };
}

/** `known` with the nanoseconds of the file's time now (the same object when they agree). */
function withNs(known: FileEntry, ns: number): FileEntry {
  if ((known.mtime_ns ?? 0) === ns) return known;
  const { mtime_ns: _, ...rest } = known;
  return ns > 0 ? { ...rest, mtime_ns: ns } : rest;
}

/**
 * A link's target as synced: one naming a place inside the workspace by absolute path is kept
 * relative to it (rsync -a keeps it as is, but the path would name another folder elsewhere);
 * any other target as it is.
 */
export function linkTarget(root: string, path: string, target: string): string {
  if (!isAbsolute(target)) return target;
  for (const base of [root, realRoot(root)]) {
    const inside = relative(base, target);
    if (inside !== '' && inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside))
      return relative(dirname(join(root, path)), join(root, inside)) || '.';
  }
  return target;
}

function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

/** `byPath`: the previous state's entries by path, when the caller has them already. */
export async function scanWorkspace(
  root: string,
  rules: readonly ExcludeRule[],
  previous?: StateFile,
  byPath: ReadonlyMap<string, FileEntry> = byPathOf(previous),
): Promise<ScanResult> {
  const found: Found[] = [];
  const links: FileEntry[] = [];
  const symlinks: string[] = [];
  const specials: string[] = [];
  const unreadable: string[] = [];
  const dirs: string[] = [];
  const badNames: string[] = [];
  const dirModes: Record<string, number> = {};
  const dirTimes: Record<string, number> = {};
  /** Files with more than one name, by device and inode. */
  const inodes = new Map<string, string[]>();
  /** One entry of a folder: how many synced things it counts for (a folder: 1, or 0 when excluded). */
  const visit = async (d: Dirent, dir: string, rel: string): Promise<number> => {
    const path = rel ? `${rel}/${d.name}` : d.name;
    const abs = join(dir, d.name);
    try {
      if (d.name.includes('\uFFFD') && !isExcluded(path, d.isDirectory(), rules)) {
        badNames.push(path);
        return 1;
      }
      if (d.isSymbolicLink()) {
        if (isExcluded(path, false, rules)) return 0;
        const st = lstatSync(abs, { bigint: true });
        const target = linkTarget(root, path, readlinkSync(abs));
        if (!linkStaysInside(path, target)) {
          symlinks.push(path);
          return 0;
        }
        const time = splitNs(st.mtimeNs);
        links.push(linkEntry(path, target, time.mtimeS, time.ns));
        return 1;
      }
      if (d.isDirectory()) {
        if (isExcluded(path, true, rules)) return 0;
        const st = lstatSync(abs);
        const mode = st.mode & 0o777;
        if (mode !== 0o755) dirModes[path] = mode;
        dirTimes[path] = seconds(st.mtimeMs);
        const inside = await walk(abs, path);
        if (inside === 0) dirs.push(path);
        return 1;
      }
      if (isExcluded(path, false, rules)) return 0;
      if (!d.isFile()) {
        specials.push(path);
        return 0;
      }
      // Synchronous: 10,000 lstats take ~50 ms so, ~200 ms as thread-pool round trips, most of
      // a no-op sync's time (docs/performance.md#workspace-sync).
      // With bigints: the nanoseconds of its time, which a double of milliseconds does not hold.
      const big = lstatSync(abs, { bigint: true });
      const st = { size: Number(big.size), mode: Number(big.mode), nlink: Number(big.nlink), dev: big.dev, ino: big.ino };
      // A stub a killed sandboxed run left in the worktree is not the person's work.
      if (st.size === 0 && (await isSandboxStubFile(path, st))) return 0;
      found.push({ path, size: st.size, ...splitNs(big.mtimeNs), mode: st.mode & 0o777 });
      if (st.nlink > 1) {
        const key = `${st.dev}:${st.ino}`;
        inodes.set(key, [...(inodes.get(key) ?? []), path]);
      }
      return 1;
    } catch (error) {
      // A file or folder this user may not read (a folder without search permission refuses
      // the lstat of what it holds): named, never an unexplained failure.
      if (!isDenied(error)) throw error;
      unreadable.push(path);
      return 1;
    }
  };
  /**
   * Returns how many synced things the folder holds (0: it is stored as an empty folder). One
   * folder at a time: reading them all at once held every name of the tree twice more (100,000
   * directory entries and their promises), 12 MB of a 100,000-file sync's peak, and was no faster.
   */
  const walk = async (dir: string, rel: string): Promise<number> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch((error: unknown) =>
      isDenied(error) ? undefined : Promise.reject(error),
    );
    if (entries === undefined) {
      unreadable.push(rel || '.');
      return 1; // not an empty folder: its contents are unknown
    }
    let count = 0;
    for (const d of entries) count += await visit(d, dir, rel);
    return count;
  };
  await walk(root, '');
  let bytesHashed = 0;
  const hashed = await mapPool(found, 8, async (f): Promise<FileEntry | undefined> => {
    const known = cachedEntry(previous, byPath, f.path, f.size, f.mtimeS);
    // The recorded entry itself when nothing about the file changed: one object per file, not two.
    const ns = f.ns > 0 ? { mtime_ns: f.ns } : {};
    if (known?.sha256 !== undefined && known.mode === f.mode) return withNs(known, f.ns);
    if (known?.sha256 !== undefined)
      return { path: f.path, checksum: known.checksum, size: f.size, modified_at: f.mtimeS, ...ns, sha256: known.sha256, mode: f.mode };
    const read = await hashFile(join(root, ...f.path.split('/')), f.size).catch((error: unknown) =>
      isDenied(error) ? undefined : Promise.reject(error),
    );
    if (read === undefined) {
      unreadable.push(f.path);
      return undefined;
    }
    bytesHashed += read.bytes;
    // The size of what was hashed: the file may have been rewritten since its lstat.
    return { path: f.path, checksum: read.md5, size: read.bytes, modified_at: f.mtimeS, ...ns, sha256: read.sha256, mode: f.mode };
  });
  const files = hashed.filter((f): f is FileEntry => f !== undefined);
  files.push(...links);
  files.sort(inPathOrder);
  return {
    files,
    symlinks: symlinks.sort(),
    specials: specials.sort(),
    unreadable: unreadable.sort(),
    dirs: dirs.sort(),
    dir_modes: dirModes,
    dir_times: dirTimes,
    hardlinks: hardlinkGroups(inodes),
    badNames: badNames.sort(),
    bytesHashed,
  };
}

/** A permission refusal (a file or folder without read access for this user). */
function isDenied(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EACCES' || code === 'EPERM';
}

/** A state's entries by path (over its own list when that is in path order). */
export function byPathOf(state: StateFile | undefined): EntriesByPath {
  return entriesByPath(state?.files ?? []);
}

/** Groups of two or more synced names of one file, each in path order, in order of their first path. */
function hardlinkGroups(inodes: ReadonlyMap<string, string[]>): string[][] {
  return [...inodes.values()]
    .filter((g) => g.length > 1)
    .map((g) => g.sort(inPathOrderOfText))
    .sort((a, b) => inPathOrderOfText(a[0]!, b[0]!));
}

function inPathOrderOfText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Every write a pull makes goes through here, so that nothing a store says can land outside the
// workspace: parents are checked one by one (a symlink or a file on the way refuses the path),
// content goes to a temp file beside its target (a name atlas keeps, transfer/staging.ts), is
// checked against its size and SHA-256 (its MD5 when it has none), and is renamed over the target once every content of
// the pull is checked (a rename replaces a symlink, it never writes through one).
import { chmodSync, lstatSync, readlinkSync, renameSync, utimesSync } from 'node:fs';
import { chmod, lstat, lutimes, mkdir, rm, rmdir, symlink, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { Observation } from '../../domain/sync-plan.js';
import type { FileEntry, StateFile } from '../../domain/sync-state.js';
import { positionsOf, TEMP_DIR_NAME } from '../../domain/sync-state.js';
import { entryTime } from '../../domain/sync-time.js';
import { personMode } from '../../store/private-umask.js';
import { md5File } from './file-hash.js';
import { mapPool } from './pool.js';
import { byPathOf, cachedEntry, linkEntry, linkTarget, seconds } from './scan.js';
import type { Written } from './stream-file.js';

type ParentCheck = { ok: true; exists: boolean } | { ok: false; problem: string };

async function lstatOrNull(path: string) {
  try {
    return await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** The same, synchronous: for the one lstat per file of a pull's plan (see scanWorkspace). */
function lstatOrNullSync(path: string) {
  return lstatSync(path, { throwIfNoEntry: false }) ?? null;
}

/** Checks the folders on the way to `rel` (cached per folder across one pull). */
async function checkParents(root: string, rel: string, cache: Map<string, Promise<ParentCheck>>): Promise<ParentCheck> {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    let pending = cache.get(dir);
    if (!pending) {
      pending = lstatOrNull(join(root, dir)).then((st): ParentCheck => {
        if (st === null) return { ok: true, exists: false };
        if (st.isSymbolicLink()) return { ok: false, problem: `${dir} is a symlink here (writing through it could leave the workspace)` };
        if (!st.isDirectory()) return { ok: false, problem: `${dir} is a file here, where a folder should be` };
        return { ok: true, exists: true };
      });
      cache.set(dir, pending);
    }
    const check = await pending;
    if (!check.ok || !check.exists) return check;
  }
  return { ok: true, exists: true };
}

/** One object for every path that is missing (a pull into an empty folder: 100,000 of them), a folder or neither. */
const MISSING: Observation = Object.freeze({ kind: 'missing' });
const DIR: Observation = Object.freeze({ kind: 'dir' });
const OTHER: Observation = Object.freeze({ kind: 'other' });
const allMissing = (): Observation => MISSING;

/**
 * What is at each path now; checksums reuse the last state's when nothing can have changed
 * (`byPath`: its entries by path, when the caller has them already). What is seen is kept beside
 * `paths`, by position, not in a table by path (at 100,000 paths a Map's table is ~4 MB), and a
 * file as the last sync left it as its tracked entry, not a copy of its fields.
 */
export async function observePaths(
  root: string,
  paths: readonly string[],
  previous: StateFile | undefined,
  byPath: ReadonlyMap<string, FileEntry> = byPathOf(previous),
): Promise<(path: string) => Observation> {
  const cache = new Map<string, Promise<ParentCheck>>();
  const seen: (Observation | FileEntry | undefined)[] = new Array(paths.length);
  const look = async (path: string): Promise<Observation | FileEntry | undefined> => {
    const parents = await checkParents(root, path, cache);
    if (!parents.ok) return { kind: 'blocked', problem: parents.problem };
    if (!parents.exists) return undefined;
    const st = lstatOrNullSync(join(root, path));
    if (st === null) return undefined;
    if (st.isSymbolicLink())
      return { kind: 'symlink', checksum: linkEntry(path, linkTarget(root, path, readlinkSync(join(root, path))), 0).checksum };
    if (st.isDirectory()) return DIR;
    if (!st.isFile()) return OTHER;
    const mtimeS = seconds(st.mtimeMs);
    const mode = st.mode & 0o777;
    const known = cachedEntry(previous, byPath, path, st.size, mtimeS);
    if (known && known.mode === mode) return known;
    const checksum = known?.checksum ?? (await md5File(join(root, path), st.size));
    return { kind: 'file', checksum, size: st.size, modified_at: mtimeS, mode };
  };
  let present = 0;
  await mapPool(paths, 16, async (path, i) => {
    const here = await look(path);
    if (here !== undefined) present++;
    seen[i] = here;
  });
  // Nothing here (a pull into an empty folder): neither the paths nor what was seen are kept. The
  // answer is made outside this function: a closure made here would hold its scope, and with it
  // both lists (1.7 MB at 100,000 paths, for the whole pull).
  if (present === 0) return allMissing;
  const position = positionsOf(paths.length, (i) => paths[i]!);
  return (path) => {
    const found = seen[position(path)];
    if (found === undefined) return MISSING;
    return 'kind' in found
      ? found
      : { kind: 'file', checksum: found.checksum, size: found.size, modified_at: found.modified_at, mode: found.mode! };
  };
}

/**
 * Creates the folders on the way to `rel`, refusing symlinks and files there. `made` remembers the
 * folders this pull already checked or created (one lstat per folder, not per file).
 */
export async function ensureParents(
  root: string,
  rel: string,
  made: Map<string, Promise<void>> = new Map(),
  created?: string[],
): Promise<void> {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    let pending = made.get(dir);
    if (!pending) {
      pending = ensureFolder(root, dir, created);
      made.set(dir, pending);
    }
    await pending;
  }
}

/** Makes `dir` unless it is a plain folder already; one it made is added to `created`. */
async function ensureFolder(root: string, dir: string, created?: string[]): Promise<void> {
  const path = join(root, dir);
  const st = await lstatOrNull(path);
  if (st === null) {
    const made = await mkdir(path).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
        return false;
      },
    );
    if (made) created?.push(dir);
    const again = await lstat(path);
    if (again.isDirectory() && !again.isSymbolicLink()) {
      // A folder of the person's tree: the mode their umask gives, not atlas's own 0700.
      const shared = personMode(0o777);
      if (shared !== undefined) await chmod(path, shared);
      return;
    }
  } else if (st.isDirectory() && !st.isSymbolicLink()) return;
  throw new AtlasError(`refused to write into ${dir}: it is not a plain folder here`, { exitCode: EXIT.failure });
}

let sequence = 0;

/** A new temp path in the root's temp folder (made by `prepareTemps`). */
export function tempPathFor(root: string): string {
  sequence = (sequence + 1) % 1_000_000_000;
  return join(root, TEMP_DIR_NAME, `${process.pid}-${sequence}`);
}

/**
 * Empties the root's temp folder (what a killed pull left: only atlas writes there, and the
 * caller holds the workspace's lock) and makes it again.
 */
export async function prepareTemps(root: string): Promise<void> {
  const dir = join(root, TEMP_DIR_NAME);
  const st = await lstatOrNull(dir);
  if (st && !st.isDirectory())
    throw new AtlasError(`${dir} is not a folder: atlas keeps its temp files there`, {
      exitCode: EXIT.failure,
      hint: 'move it away, then pull again',
    });
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir);
}

/** Removes the temp folder once a pull is done with it. */
export async function dropTemps(root: string): Promise<void> {
  await rm(join(root, TEMP_DIR_NAME), { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Where a pull stages its writes (transfer/staging.ts): a temp name beside each target, the
 * folders checked or made on the way (`folders`: ensureParents' memory; `created`: those made).
 */
export interface Stage {
  readonly folders: Map<string, Promise<void>>;
  readonly created: string[];
  /** A new temp path in the folder of `rel`, for its content. */
  tempFor(rel: string): string;
  /** Records a checked temp file or link, renamed over `rel` when the pull commits. */
  add(temp: string, rel: string): void;
}

/**
 * Fetches `entry` beside its target: temp file, size and hash checked (checkStaged), mode and mtime set
 * to the stored ones, then staged (renamed into place when every content is checked). Returns the
 * bytes received.
 */
export async function stageVerified(
  root: string,
  entry: FileEntry,
  fetch: (tempPath: string) => Promise<Written>,
  describe: string,
  stage: Stage,
): Promise<number> {
  await ensureParents(root, entry.path, stage.folders, stage.created);
  const temp = stage.tempFor(entry.path);
  try {
    return checkStaged(entry, await fetch(temp), describe, temp, stage);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * A content written to `temp` for `entry`: refused unless `got` (what was written) matches its
 * size and its SHA-256 (its MD5, for a content stored before content addressing: it has no
 * SHA-256); else given the stored mode and mtime (unless the writer `applied` them) and staged.
 * Returns the bytes.
 */
export function checkStaged(entry: FileEntry, got: Written, describe: string, temp: string, stage: Stage, applied = false): number {
  const [name, wrote, expected] = entry.sha256 === undefined ? ['MD5', got.md5, entry.checksum] : ['SHA-256', got.sha256, entry.sha256];
  if (wrote !== expected || got.bytes !== entry.size) {
    throw new AtlasError(
      `${describe} does not match its .sandbox-state (${name} ${wrote ?? 'not computed'}, ${got.bytes} bytes; expected ${expected}, ${entry.size} bytes)`,
      {
        exitCode: EXIT.failure,
        hint: 'the stored copy is damaged or was changed outside atlas: pull another version (atlas sync versions), or push again from a good copy',
      },
    );
  }
  // Synchronous: two metadata calls on a local file cost less than two round trips through
  // libuv's thread pool, which dominated a pull of many small files (docs/performance.md).
  if (!applied) {
    if (entry.mode !== undefined) chmodSync(temp, entry.mode);
    const time = entryTime(entry);
    utimesSync(temp, time, time);
  }
  stage.add(temp, entry.path);
  return got.bytes;
}

/** Renames a staged temp over `rel`; a folder there (it fails with EISDIR) is refused. */
export function renameStaged(root: string, temp: string, rel: string): void {
  try {
    renameSync(temp, join(root, rel));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST')
      throw new AtlasError(`refused to write ${rel}: it is a folder here`, { exitCode: EXIT.failure });
    throw error;
  }
}

/** Deletes files the plan allows, then the folders that became empty (never the root). */
export async function deleteFiles(root: string, paths: readonly string[]): Promise<number> {
  const dirs = new Set<string>();
  let deleted = 0;
  for (const rel of paths) {
    await ensureNoLinkOnTheWay(root, rel);
    try {
      await unlink(join(root, rel));
      deleted++;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (let d = dirname(rel); d !== '.' && d !== ''; d = dirname(d)) dirs.add(d);
  }
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) await rmdir(join(root, d)).catch(() => undefined);
  return deleted;
}

async function ensureNoLinkOnTheWay(root: string, rel: string): Promise<void> {
  const check = await checkParents(root, rel, new Map());
  if (!check.ok) throw new AtlasError(`refused to delete ${rel}: ${check.problem}`, { exitCode: EXIT.failure });
}

/** Stages a link the version holds (the caller checked it stays inside the root): a temp link beside the path. */
export async function stageLink(root: string, entry: FileEntry, stage: Stage): Promise<void> {
  await ensureParents(root, entry.path, stage.folders, stage.created);
  const temp = stage.tempFor(entry.path);
  try {
    await symlink(entry.link!, temp);
    // The link's own time (rsync -a), never its target's; a rename keeps it.
    await lutimes(temp, entryTime(entry), entryTime(entry));
    stage.add(temp, entry.path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

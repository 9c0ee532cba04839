// What a SIGKILLed sandboxed run leaves: the read-only empty stubs bubblewrap creates in the
// worktree as mount points for the library's write-protected dotfiles (.bashrc, .gitconfig,
// .mcp.json, .vscode, .idea, an empty .claude/, ...), the network bridges' Unix sockets and empty
// mount source folder in the temp folder, and the orphaned socat processes serving them. Before a
// sandboxed command starts, atlas records in the task folder (sandbox-litter.json) which of those
// paths do not exist yet; recovery and cleanup remove exactly those, and only while they still
// are what the sandbox made (zero-byte read-only files, empty folders, not tracked by git).
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { runGit } from '../../git/run-git.js';
import { isPidRunning, processStartIdentity } from '../../liveness/process-identity.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { readJsonFile } from '../../store/json-file.js';
import { atlasProtectedPaths, isInside } from './policy.js';
import { exists, treeControlPaths } from './protected-paths.js';
import { stopBridges } from './socat.js';

export const LITTER_FILE = 'sandbox-litter.json';

export interface LitterRecord {
  pid: number;
  process_start: string;
  host: string;
  worktree: string;
  /** Paths in the worktree that did not exist when the sandbox was set up. */
  stubs: string[];
  /** The network bridges' sockets (temp folder). */
  sockets: string[];
  /** The library's empty mount source folders (temp folder). */
  temp_dirs: string[];
}

/**
 * Worktree-relative paths protected with a mount: the library's dangerous files and folders
 * (v0.0.78), and atlas's own list (protected-paths.ts).
 */
async function protectedPaths(worktree: string): Promise<string[]> {
  const utils = await import('@anthropic-ai/sandbox-runtime/dist/sandbox/sandbox-utils.js');
  const own = [...atlasProtectedPaths(worktree), ...treeControlPaths(worktree)].map((p) => relative(worktree, p));
  return [...new Set([...utils.DANGEROUS_FILES, ...utils.getDangerousDirectories(), '.git/hooks', '.git/config', ...own])];
}

/** The first missing component of each protected path: what bubblewrap would create. */
export async function absentStubPaths(worktree: string): Promise<string[]> {
  const found = new Set<string>();
  for (const rel of await protectedPaths(worktree)) {
    let path = worktree;
    for (const part of rel.split('/')) {
      path = join(path, part);
      if (!exists(path)) {
        found.add(path);
        break;
      }
    }
  }
  return [...found];
}

export function emptyMountDirs(dir = tmpdir()): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.startsWith('claude-empty-'))
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

export function readLitter(taskDir: string): LitterRecord | undefined {
  try {
    const data = readJsonFile(join(taskDir, LITTER_FILE)) as Partial<LitterRecord>;
    if (typeof data.pid !== 'number' || typeof data.worktree !== 'string') return undefined;
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
    return {
      pid: data.pid,
      process_start: typeof data.process_start === 'string' ? data.process_start : 'unknown',
      host: typeof data.host === 'string' ? data.host : '',
      worktree: data.worktree,
      stubs: strings(data.stubs),
      sockets: strings(data.sockets),
      temp_dirs: strings(data.temp_dirs),
    };
  } catch {
    return undefined;
  }
}

/** Adds what this run may leave to the task's record (kept across commands until swept). */
export function recordLitter(taskDir: string, add: { worktree: string; stubs: string[]; sockets: string[]; temp_dirs: string[] }): void {
  const before = readLitter(taskDir);
  const mine = before && before.pid === process.pid ? before : undefined;
  const merge = (a: string[] | undefined, b: string[]) => [...new Set([...(a ?? []), ...b])];
  const record: LitterRecord = {
    pid: process.pid,
    process_start: processStartIdentity(process.pid) ?? 'unknown',
    host: hostname(),
    worktree: add.worktree,
    // An earlier dead run's entries stay until a sweep has looked at them.
    stubs: merge(before?.stubs, add.stubs),
    sockets: merge(mine?.sockets ?? before?.sockets, add.sockets),
    temp_dirs: merge(mine?.temp_dirs ?? before?.temp_dirs, add.temp_dirs),
  };
  // Not fsynced: it must survive a killed process, not a power cut (then only stubs would stay).
  writeFileAtomic(join(taskDir, LITTER_FILE), `${JSON.stringify(record, null, 2)}\n`, { durable: false });
}

/** After the sandboxed commands ended: the stubs bubblewrap made at paths that were absent go. */
export function removeStubs(paths: readonly string[]): void {
  for (const path of [...paths].sort((a, b) => b.split('/').length - a.split('/').length)) {
    if (!isStub(path)) continue;
    try {
      if (lstatSync(path).isDirectory()) rmdirSync(path);
      else unlinkSync(path);
    } catch {
      // Gone, or not ours to remove.
    }
  }
}

/** The run has ended normally: the library removed its stubs, so the record has nothing left to say. */
export function finishLitter(taskDir: string): void {
  const record = readLitter(taskDir);
  if (!record || record.pid !== process.pid || record.stubs.some((p) => exists(p))) return;
  try {
    unlinkSync(join(taskDir, LITTER_FILE));
  } catch {
    // Already gone.
  }
}

/** The process that wrote the record is still alive, or on another machine (then nothing of it is litter here). */
export function writerAlive(record: Pick<LitterRecord, 'pid' | 'process_start' | 'host'>): boolean {
  if (record.host !== hostname()) return true;
  if (!isPidRunning(record.pid)) return false;
  const start = processStartIdentity(record.pid);
  return record.process_start === 'unknown' || start === undefined || start === record.process_start;
}

/** A stub as bubblewrap makes it: an empty read-only file with one link, or an empty folder. */
/**
 * Is a workspace-root file one the sandbox may have left as a mount-point stub (a name it protects,
 * zero bytes, nobody may write it, one link)? Workspace sync never stores these.
 */
export async function isSandboxStubFile(rel: string, st: { size: number; mode: number; nlink: number }): Promise<boolean> {
  if (rel.includes('/') || st.size !== 0 || (st.mode & 0o222) !== 0 || st.nlink !== 1) return false;
  const utils = await import('@anthropic-ai/sandbox-runtime/dist/sandbox/sandbox-utils.js');
  return (utils.DANGEROUS_FILES as readonly string[]).includes(rel);
}

function isStub(path: string): boolean {
  try {
    const st = lstatSync(path);
    if (st.isFile()) return st.size === 0 && (st.mode & 0o222) === 0 && st.nlink === 1;
    if (st.isDirectory()) return readdirSync(path).length === 0;
    return false;
  } catch {
    return false;
  }
}

async function trackedByGit(worktree: string, paths: string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rel = paths.map((p) => relative(worktree, p));
  const result = await runGit(worktree, ['ls-files', '-z', '--', ...rel], { allowFailure: true });
  return new Set(
    result.stdout
      .split('\0')
      .filter(Boolean)
      .map((r) => join(worktree, r)),
  );
}

export interface LitterSweep {
  worktree: string;
  stubs: string[];
  sockets: string[];
  temp_dirs: string[];
  /** socat processes of the dead run that were stopped. */
  processes: number[];
}

/**
 * Removes what a dead sandboxed run of this task left (nothing while that run is alive). A stub
 * path that now holds anything, or that git tracks, is a user's file and stays.
 */
export async function sweepLitter(taskDir: string, options: { dryRun?: boolean } = {}): Promise<LitterSweep | undefined> {
  const record = readLitter(taskDir);
  if (!record || writerAlive(record)) return undefined;
  const dry = Boolean(options.dryRun);
  const sweep: LitterSweep = { worktree: record.worktree, stubs: [], temp_dirs: [], ...stopBridges(record.sockets, dry) };
  for (const dir of record.temp_dirs) {
    if (!isStub(dir)) continue;
    if (!dry) rmdirSync(dir);
    sweep.temp_dirs.push(dir);
  }
  // Deepest first, so that an emptied .claude/ can go after what was inside it.
  const candidates = record.stubs
    .filter((p) => isInside(p, record.worktree) && p !== record.worktree)
    .sort((a, b) => b.split('/').length - a.split('/').length);
  const tracked = await trackedByGit(
    record.worktree,
    candidates.filter((p) => exists(p)),
  );
  for (const path of candidates) {
    if (tracked.has(path) || !isStub(path)) continue;
    if (!dry) {
      try {
        if (lstatSync(path).isDirectory()) rmdirSync(path);
        else unlinkSync(path);
      } catch {
        continue;
      }
    }
    sweep.stubs.push(path);
  }
  if (!dry) {
    try {
      unlinkSync(join(taskDir, LITTER_FILE));
    } catch {
      // Already gone.
    }
  }
  return sweep;
}

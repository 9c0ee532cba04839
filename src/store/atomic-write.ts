// Write-then-rename so a reader (or a crash) only ever sees the old file or the new one, whole.
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { personMode } from './private-umask.js';

/** Files and folders under ATLAS_HOME: readable by their owner only. */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;
/** Files written where the user asked (a bundle, a report): the usual mode. */
export const SHARED_FILE_MODE = 0o644;

export interface AtomicWriteOptions {
  /** Default PRIVATE_FILE_MODE. */
  mode?: number;
  /**
   * fsync the data and the directory (default). Derived files that can be regenerated (HOOK.md)
   * skip it: the rename still guarantees readers see a whole file.
   */
  durable?: boolean;
  /** Test seam: called after the temp file is durable and before the rename. */
  beforeRename?: (tempPath: string) => void;
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

let sequence = 0;

/** Unique per process (pid) and per call (time + counter); `wx` below refuses any collision. */
export function tempName(path: string): string {
  sequence = (sequence + 1) % 1_000_000;
  return join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now().toString(36)}${sequence}.tmp`);
}

/**
 * Writes `data` to `path` through a temp file and a rename. Given in pieces (an iterable), each is
 * written as it comes: a 20 MB state is never held whole.
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array | Iterable<string | Uint8Array>,
  options: AtomicWriteOptions = {},
): void {
  const dir = dirname(path);
  // node:crypto is not used for the name: loading it costs read-only commands ~4 ms.
  const temp = tempName(path);
  // Private by default: what atlas writes (prompts, validation output) can hold secrets.
  const mode = options.mode ?? PRIVATE_FILE_MODE;
  const fd = openSync(temp, 'wx', mode);
  try {
    // A file for the person (SHARED_FILE_MODE): the mode their umask gives, not atlas's 0600.
    const shared = personMode(mode);
    if (shared !== undefined) fchmodSync(fd, shared);
    const pieces = typeof data === 'string' || data instanceof Uint8Array ? [data] : data;
    for (const piece of pieces) writeAllSync(fd, piece);
    if (options.durable !== false) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      /* already gone */
    }
    throw error;
  }
  closeSync(fd);
  try {
    options.beforeRename?.(temp);
    renameSync(temp, path);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      /* already gone */
    }
    throw error;
  }
  if (options.durable !== false) fsyncDir(dir);
}

/** Writes all of `data` at the descriptor's position (the end, for a file opened to append); returns its length in bytes. */
export function writeAllSync(fd: number, data: string | Uint8Array): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
  return bytes.length;
}

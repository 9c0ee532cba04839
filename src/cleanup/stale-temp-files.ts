// Temp files left by atomic writes that were interrupted (a SIGKILL between writing and renaming).
// One is stale, and may go, only when its name is exactly atlas's temp name for a file atlas writes
// in that folder, it is a plain file older than the grace period, and the process named in it no
// longer runs: a write in progress is never touched. (A pid reused by another process keeps the
// file: cleanup cannot tell, so it errs on keeping.)
import { lstatSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isPidRunning } from '../liveness/process-identity.js';
import { parseTempName } from './temp-name.js';
import type { TempPlace } from './temp-places.js';
import { entriesUnder } from './walk.js';

export interface StaleTempFile {
  path: string;
  /** The process that was writing it. */
  pid: number;
  age_ms: number;
  bytes: number;
}

export type TempVerdict =
  | { stale: true; file: StaleTempFile }
  | { stale: false; why: 'not_atlas' | 'not_a_file' | 'recent' | 'writer_running' | 'gone' };

/** Judges one entry `name` of `dir` (its place says which targets atlas writes there). */
export function judgeTempFile(dir: string, name: string, accepts: (target: string) => boolean, now: number, graceMs: number): TempVerdict {
  const parsed = parseTempName(name);
  if (!parsed || !accepts(parsed.target)) return { stale: false, why: 'not_atlas' };
  const path = join(dir, name);
  let st: import('node:fs').Stats;
  try {
    st = lstatSync(path);
  } catch {
    return { stale: false, why: 'gone' };
  }
  if (!st.isFile()) return { stale: false, why: 'not_a_file' };
  const age = now - st.mtimeMs;
  if (age <= graceMs) return { stale: false, why: 'recent' };
  if (isPidRunning(parsed.pid)) return { stale: false, why: 'writer_running' };
  return { stale: true, file: { path, pid: parsed.pid, age_ms: Math.round(age), bytes: st.size } };
}

/** Every stale temp file in `places`, in a stable order. Reads only. */
export function findStaleTempFiles(places: readonly TempPlace[], now: number, graceMs: number): StaleTempFile[] {
  const found: StaleTempFile[] = [];
  for (const place of places) {
    for (const { dir, name } of entriesUnder(place.dir, place.recurse)) {
      const verdict = judgeTempFile(dir, name, place.accepts, now, graceMs);
      if (verdict.stale) found.push(verdict.file);
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Removes a temp file found stale, after judging it again (it may have been renamed into place or
 * rewritten since). True when this call removed it.
 */
export function removeStaleTempFile(file: StaleTempFile, now: number, graceMs: number): boolean {
  // Its name was accepted when it was found; only its age and its writer can have changed.
  const verdict = judgeTempFile(dirname(file.path), basename(file.path), () => true, now, graceMs);
  if (!verdict.stale) return false;
  try {
    unlinkSync(file.path);
    return true;
  } catch {
    return false;
  }
}

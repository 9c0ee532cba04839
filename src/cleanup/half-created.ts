// Task folders that `atlas start` claimed and never finished: it was killed after claiming
// `tasks/<task-id>/` (and writing owner.json) and before it wrote task.json. Nothing ran in them.
// `atlas status` lists them and `atlas cleanup` removes them, both by this one rule.
//
// Such a folder goes only when it has neither task.json nor hook.json, has not changed for the
// grace period, no live process owns it, and it holds nothing but what atlas puts there at that
// moment: the empty artifacts/ folder, owner.json, and stale temp files of atlas's writes.
// Anything else is kept and named: it may be a user's. Light (file reads only): status uses it.
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { checkLiveness, readOwner } from '../liveness/owner.js';
import { taskFiles } from '../store/paths.js';
import { formatAge } from './age.js';
import { directorySize } from './dir-size.js';
import { DEBRIS_GRACE_MS } from './grace.js';
import { judgeTempFile } from './stale-temp-files.js';
import { parseTempName } from './temp-name.js';
import { taskTempPlaces } from './temp-places.js';

function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** No task.json and no hook.json: `atlas start` stopped before it wrote the task. */
export function isHalfCreated(dir: string): boolean {
  const files = taskFiles(dir);
  return !present(files.task) && !present(files.hook);
}

export type HalfCreatedAssessment =
  /** `remove`: the files to unlink (owner.json, stale temp files), then artifacts/ and the folder. */
  | { action: 'remove'; ageMs: number; bytes: number; remove: string[] }
  /** Changed within the grace period: a start may still be setting it up. */
  | { action: 'keep'; why: 'recent'; ageMs: number; reason: string; ownerGone: boolean }
  /** A live process owns it or is writing in it. */
  | { action: 'keep'; why: 'owned'; reason: string }
  /** It holds something atlas does not leave there: never deleted. */
  | { action: 'keep'; why: 'foreign'; foreign: string[]; reason: string }
  | { action: 'keep'; why: 'unreadable'; reason: string };

function listNames(entries: string[]): string {
  const shown = entries.slice(0, 3).join(', ');
  return entries.length > 3 ? `${shown} and ${entries.length - 3} more` : shown;
}

export function assessHalfCreated(dir: string, now: number, graceMs: number = DEBRIS_GRACE_MS): HalfCreatedAssessment {
  let names: string[];
  let newest: number;
  try {
    names = readdirSync(dir).sort();
    newest = lstatSync(dir).mtimeMs;
  } catch (error) {
    return { action: 'keep', why: 'unreadable', reason: `its folder cannot be read: ${(error as Error).message}` };
  }
  const files = taskFiles(dir);
  const acceptsTemp = taskTempPlaces(dir)[0]!.accepts;
  const foreign: string[] = [];
  const remove: string[] = [];
  let writer: number | undefined;
  for (const name of names) {
    const path = join(dir, name);
    let st: import('node:fs').Stats;
    try {
      st = lstatSync(path);
    } catch {
      continue; // Vanished meanwhile.
    }
    newest = Math.max(newest, st.mtimeMs);
    if (name === 'artifacts' && st.isDirectory()) {
      let inside: string[];
      try {
        inside = readdirSync(path);
      } catch {
        inside = ['?'];
      }
      foreign.push(...inside.sort().map((n) => `artifacts/${n}`));
      continue;
    }
    if (name === 'owner.json' && st.isFile()) {
      if (readOwner(path)) remove.push(path);
      else foreign.push('owner.json (not an owner record)');
      continue;
    }
    const temp = judgeTempFile(dir, name, acceptsTemp, now, graceMs);
    // A young temp file makes the folder young: the folder's own age decides below.
    if (temp.stale || (!temp.stale && temp.why === 'recent')) remove.push(path);
    else if (temp.why === 'writer_running') writer = parseTempName(name)!.pid;
    else if (temp.why !== 'gone') foreign.push(st.isDirectory() ? `${name}/` : name);
  }
  if (foreign.length > 0) {
    return {
      action: 'keep',
      why: 'foreign',
      foreign,
      reason: `it holds files atlas did not put there (${listNames(foreign)}); look at them, then remove the folder yourself`,
    };
  }
  const liveness = checkLiveness(readOwner(files.owner), now);
  if (liveness.status === 'alive')
    return { action: 'keep', why: 'owned', reason: `atlas start (pid ${liveness.owner.pid}) is still setting it up` };
  if (liveness.status === 'remote')
    return { action: 'keep', why: 'owned', reason: `owned by pid ${liveness.owner.pid} on ${liveness.owner.host}, which still beats` };
  // Stale on this host means the pid still runs as the same process: hung or stopped, not dead.
  if (liveness.status === 'stale' && liveness.owner.host === hostname()) {
    return { action: 'keep', why: 'owned', reason: `its atlas start (pid ${liveness.owner.pid}) still runs but is stuck; stop it first` };
  }
  if (writer !== undefined) return { action: 'keep', why: 'owned', reason: `process ${writer} is writing in it` };
  const ageMs = Math.max(0, Math.round(now - newest));
  if (ageMs <= graceMs) {
    return {
      action: 'keep',
      why: 'recent',
      ageMs,
      ownerGone: liveness.status === 'gone' || liveness.status === 'stale',
      reason: `changed ${formatAge(ageMs)} ago; \`atlas cleanup\` removes it once it is ${formatAge(graceMs)} old (in ${formatAge(Math.ceil((graceMs - ageMs) / 60_000) * 60_000)})`,
    };
  }
  return { action: 'remove', ageMs, bytes: directorySize(dir), remove };
}

export type HalfCreatedRemoval = { ok: true; bytes: number; ageMs: number } | { ok: false; reason: string };

/**
 * Removes a half-created folder, judging it again first. File by file, then the empty folders with
 * rmdir, never recursively: anything written there meanwhile stops the removal and stays.
 */
export function removeHalfCreated(dir: string, now: number, graceMs: number = DEBRIS_GRACE_MS): HalfCreatedRemoval {
  if (!isHalfCreated(dir)) return { ok: false, reason: 'atlas start wrote its task meanwhile' };
  const assessment = assessHalfCreated(dir, now, graceMs);
  if (assessment.action === 'keep') return { ok: false, reason: assessment.reason };
  try {
    for (const path of assessment.remove) unlinkSync(path);
    if (present(taskFiles(dir).artifacts)) rmdirSync(taskFiles(dir).artifacts);
    rmdirSync(dir);
  } catch (error) {
    return { ok: false, reason: `could not be removed, something changed in it meanwhile: ${(error as Error).message}` };
  }
  return { ok: true, bytes: assessment.bytes, ageMs: assessment.ageMs };
}

/** What `atlas status` says about a half-created folder. */
export function halfCreatedNote(dir: string, now: number, graceMs: number = DEBRIS_GRACE_MS): string {
  const assessment = assessHalfCreated(dir, now, graceMs);
  const stopped = 'atlas start stopped before it wrote this task (no task.json, no hook.json; nothing ran)';
  if (assessment.action === 'remove') return `${stopped}: \`atlas cleanup\` removes its folder ${dir}`;
  switch (assessment.why) {
    case 'owned':
      return `no task.json yet: ${assessment.reason}`;
    case 'recent':
      return `${assessment.ownerGone ? stopped : `${stopped}, or is still setting it up`}: its folder ${assessment.reason}`;
    case 'foreign':
      return `${stopped}, but its folder ${dir} is not left to \`atlas cleanup\`: ${assessment.reason}`;
    case 'unreadable':
      return `${stopped}: ${assessment.reason}; remove ${dir} yourself`;
  }
}

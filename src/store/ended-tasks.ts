// Workspaces whose tasks have all ended, remembered across `atlas status` runs. Ended states
// (completed, failed, abandoned) accept no transitions, so such a workspace stays ended until a
// task folder is added to or removed from its tasks/ folder, which changes that folder's mtime:
// while the mtime matches, listings take its task ids from here and never open its folders,
// task.json or hook.json. A cache only: missing, unreadable or stale, the folder is read again.
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import { homePaths } from './paths.js';
import type { TaskRef } from './task-store.js';
import { listDirs, sortTaskRefs, workspaceTaskRefs } from './task-store.js';

const FILE = 'ended-workspaces.json';

export interface EndedWorkspace {
  /** mtimeMs of <workspace>/tasks when every task in it was seen ended. */
  mtime: number;
  ids: string[];
}

export type EndedWorkspaces = Map<string, EndedWorkspace>;

function cachePath(home: string): string {
  return join(homePaths(home).cacheDir, FILE);
}

function isEntry(value: unknown): value is EndedWorkspace {
  const v = value as EndedWorkspace;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.mtime === 'number' &&
    Array.isArray(v.ids) &&
    v.ids.every((id) => typeof id === 'string')
  );
}

export function readEndedWorkspaces(home: string): EndedWorkspaces {
  try {
    const data = JSON.parse(readFileSync(cachePath(home), 'utf8')) as { workspaces?: Record<string, unknown> };
    return new Map(Object.entries(data.workspaces ?? {}).filter((e): e is [string, EndedWorkspace] => isEntry(e[1])));
  } catch {
    return new Map();
  }
}

/** Replaces the cache; a read-only home only costs speed. */
export function writeEndedWorkspaces(home: string, workspaces: EndedWorkspaces): void {
  try {
    mkdirSync(homePaths(home).cacheDir, { recursive: true, mode: 0o700 });
    const data = Object.fromEntries([...workspaces].sort(([a], [b]) => (a < b ? -1 : 1)));
    writeFileAtomic(cachePath(home), `${JSON.stringify({ workspaces: data })}\n`, { durable: false, mode: 0o600 });
  } catch {
    // Not writable: nothing lost but speed.
  }
}

function mtimeOf(path: string): number | undefined {
  return statSync(path, { throwIfNoEntry: false })?.mtimeMs;
}

export interface CachedListing {
  /** Every task folder, oldest first. */
  refs: TaskRef[];
  /** Tasks of workspaces the cache vouches for: ended, their folders not read. */
  ended: ReadonlySet<TaskRef>;
  /** The tasks/ mtime of each workspace, taken before its folder was listed. */
  mtimes: ReadonlyMap<string, number>;
}

/** listTaskRefs, with the ids of all-ended workspaces taken from the cache when still current. */
export function listTaskRefsCached(home: string, cache: EndedWorkspaces): CachedListing {
  const root = join(home, 'workspaces');
  const refs: TaskRef[] = [];
  const ended = new Set<TaskRef>();
  const mtimes = new Map<string, number>();
  for (const workspace of listDirs(root)) {
    // The mtime first: a task added after it changes it again, so the cache never hides it.
    const mtime = mtimeOf(`${root}${sep}${workspace}${sep}tasks`);
    if (mtime === undefined) continue;
    mtimes.set(workspace, mtime);
    const cached = cache.get(workspace);
    if (cached !== undefined && cached.mtime === mtime) {
      for (const ref of workspaceTaskRefs(root, workspace, cached.ids)) {
        refs.push(ref);
        ended.add(ref);
      }
    } else {
      refs.push(...workspaceTaskRefs(root, workspace));
    }
  }
  return { refs: sortTaskRefs(refs), ended, mtimes };
}

/** The cache after a listing: every workspace whose tasks were all seen ended. */
export function endedWorkspacesAfter(listing: CachedListing, endedRefs: ReadonlySet<TaskRef>): EndedWorkspaces {
  const byWorkspace = new Map<string, { ids: string[]; allEnded: boolean }>();
  for (const ref of listing.refs) {
    const entry = byWorkspace.get(ref.workspace) ?? { ids: [], allEnded: true };
    entry.ids.push(ref.id);
    if (!endedRefs.has(ref)) entry.allEnded = false;
    byWorkspace.set(ref.workspace, entry);
  }
  const next: EndedWorkspaces = new Map();
  for (const [workspace, entry] of byWorkspace) {
    const mtime = listing.mtimes.get(workspace);
    if (entry.allEnded && mtime !== undefined) next.set(workspace, { mtime, ids: entry.ids });
  }
  return next;
}

export function sameEndedWorkspaces(a: EndedWorkspaces, b: EndedWorkspaces): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    const w = b.get(k);
    if (!w || w.mtime !== v.mtime || w.ids.length !== v.ids.length || w.ids.some((id, i) => id !== v.ids[i])) return false;
  }
  return true;
}

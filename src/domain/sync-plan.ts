// What a push or a pull will do, decided before anything changes (seeds 000 §2.4, 001 §3, §4).
// Pure: the caller observes the disk and the store, this decides.
import type { FileEntry, Refusal } from './sync-state.js';
import { pairByPath, pathLookup } from './sync-state.js';

/** Seed 000's SyncStats, for both directions. */
export interface SyncStats {
  direction: 'push' | 'pull';
  /** The stored version pushed or pulled; null when nothing was done. */
  version: string | null;
  files_downloaded: number;
  files_uploaded: number;
  /** Files whose content the store already holds: the new version names it, nothing is sent. */
  files_reused: number;
  files_deleted: number;
  files_skipped: number;
  bytes_transferred: number;
  duration_ms: number;
  /** Why nothing was done, or what needs a person's eye (never fatal: fatal problems throw). */
  notes: string[];
}

export function emptyStats(direction: SyncStats['direction']): SyncStats {
  return {
    direction,
    version: null,
    files_downloaded: 0,
    files_uploaded: 0,
    files_reused: 0,
    files_deleted: 0,
    files_skipped: 0,
    bytes_transferred: 0,
    duration_ms: 0,
    notes: [],
  };
}

/** What is at a path in the workspace right now. */
export type Observation =
  | { kind: 'missing' }
  | { kind: 'file'; checksum: string; size: number; modified_at: number; mode?: number }
  | { kind: 'dir' }
  /** The checksum of its target's text, as a stored link's. */
  | { kind: 'symlink'; checksum?: string }
  | { kind: 'other' }
  /** A parent is a symlink or a file: nothing may be written there. */
  | { kind: 'blocked'; problem: string };

export interface PullPlan {
  /** In the version's order; the version's own list when every entry is downloaded (a pull into an empty folder). */
  download: readonly FileEntry[];
  skip: FileEntry[];
  delete: string[];
  /** Tracked files the store dropped but the person changed since the last sync: kept. */
  keep: Refusal[];
  /** Files the person changed (or made) here that the store would overwrite. */
  conflicts: Refusal[];
  /** Paths nothing may be written to (a symlink or a file on the way, a folder in the way). */
  refused: Refusal[];
  /** Of `refused`, the stored files where a folder is here (--force may clear a tracked one). */
  folders: string[];
}

export function planPull(
  remote: readonly FileEntry[],
  tracked: ReadonlyMap<string, FileEntry>,
  observe: (path: string) => Observation,
): PullPlan {
  const download: FileEntry[] = [];
  const plan: PullPlan = { download, skip: [], delete: [], keep: [], conflicts: [], refused: [], folders: [] };
  const wanted = pathLookup(remote);
  // While every entry so far is missing here, the downloads are the version's own first `all`
  // entries: copied only at the first entry that is not (no copy of 100,000 for an empty folder).
  let all = 0;
  for (let i = 0; i < remote.length; i++) {
    const entry = remote[i]!;
    const here = observe(entry.path);
    if (all === i) {
      if (here.kind === 'missing') {
        all++;
        continue;
      }
      for (let j = 0; j < i; j++) download.push(remote[j]!);
      all = -1;
    }
    switch (here.kind) {
      case 'missing':
        download.push(entry);
        break;
      case 'file': {
        if (here.checksum === entry.checksum) plan.skip.push(entry);
        else if (tracked.get(entry.path)?.checksum === here.checksum) download.push(entry);
        else
          plan.conflicts.push({
            path: entry.path,
            problem: tracked.has(entry.path) ? 'changed here since the last sync' : 'exists here and was never synced',
          });
        break;
      }
      case 'symlink':
        if (entry.link !== undefined && here.checksum === entry.checksum) plan.skip.push(entry);
        else if (
          entry.link !== undefined &&
          tracked.get(entry.path)?.link !== undefined &&
          tracked.get(entry.path)?.checksum === here.checksum
        )
          download.push(entry);
        else
          plan.conflicts.push({ path: entry.path, problem: 'is a symlink here (it would be replaced by a file, never written through)' });
        break;
      case 'dir':
        plan.refused.push({ path: entry.path, problem: 'is a folder here, where the store has a file' });
        plan.folders.push(entry.path);
        break;
      case 'other':
        plan.refused.push({ path: entry.path, problem: 'is not a regular file here' });
        break;
      case 'blocked':
        plan.refused.push({ path: entry.path, problem: here.problem });
        break;
    }
  }
  if (all === remote.length) plan.download = remote;
  // Only files the last sync brought or sent are ever deleted, and only when unchanged since.
  for (const [path, record] of tracked) {
    if (wanted(path)) continue;
    const here = observe(path);
    if (here.kind === 'missing' || here.kind === 'blocked') continue;
    const unchanged =
      here.kind === 'file'
        ? record.link === undefined && here.checksum === record.checksum
        : here.kind === 'symlink' && record.link !== undefined && here.checksum === record.checksum;
    if (unchanged) plan.delete.push(path);
    else
      plan.keep.push({
        path,
        problem: here.kind === 'file' ? 'changed here since the last sync, so it is kept' : `is a ${here.kind} here now, so it is kept`,
      });
  }
  return plan;
}

export interface PushPlan {
  /** The new version equals the latest stored one: no version is made. */
  unchanged: boolean;
  /** One file per content the latest version does not hold (the store may still have it). */
  upload: FileEntry[];
  /** Files whose content the latest version already holds (at any path): nothing sent. */
  reused: number;
  /** Paths of the latest version the new one no longer has. */
  removed: number;
}

/** Same file (a merge's test): both absent, or the same content and kind. */
export function sameContent(a: FileEntry | undefined, b: FileEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.checksum === b.checksum && a.size === b.size && a.link === b.link;
}

/** Equal for a push: same content, same kind, and the same mode when the stored one has a mode. */
export function sameEntry(local: FileEntry, stored: FileEntry): boolean {
  return sameContent(local, stored) && (stored.mode === undefined || local.mode === stored.mode);
}

/**
 * The push's decision. Entries are paired by path, and a content is looked for at other paths only
 * for the files not equal to the latest version's at theirs: at 100,000 files, three tables of
 * every path and hash were 17 MB of a no-op push's peak (docs/sync.md#peak-memory).
 */
export function planPush(
  local: readonly FileEntry[],
  latest: readonly FileEntry[] | undefined,
  localDirs: readonly string[] = [],
  latestDirs: readonly string[] = [],
): PushPlan {
  const plan: PushPlan = { unchanged: false, upload: [], reused: 0, removed: 0 };
  let same = 0;
  let matched = 0;
  /** Files whose content the latest version does not hold at their own path. */
  const elsewhere: FileEntry[] = [];
  const paths = pairByPath(local, latest ?? [], (entry, there) => {
    if (there) matched++;
    if (there && sameEntry(entry, there)) same++;
    if (entry.sha256 === undefined) return; // a link: it lives in the manifest
    if (there?.sha256 === entry.sha256) plan.reused++;
    else elsewhere.push(entry);
  });
  const stored = heldAmong(latest ?? [], elsewhere);
  const sending = new Set<string>();
  for (const entry of elsewhere) {
    if (stored.has(entry.sha256!) || sending.has(entry.sha256!)) plan.reused++;
    else {
      sending.add(entry.sha256!);
      plan.upload.push(entry);
    }
  }
  plan.removed = paths - matched;
  const dirsSame = localDirs.length === latestDirs.length && localDirs.every((d) => latestDirs.includes(d));
  plan.unchanged = latest !== undefined && same === local.length && plan.removed === 0 && dirsSame;
  return plan;
}

/** Which of the contents of `wanted` the entries of `files` hold, at any path. */
function heldAmong(files: readonly FileEntry[], wanted: readonly FileEntry[]): Set<string> {
  const held = new Set<string>();
  if (wanted.length === 0) return held;
  const hashes = new Set(wanted.map((f) => f.sha256!));
  for (const f of files) if (f.sha256 !== undefined && hashes.has(f.sha256)) held.add(f.sha256);
  return held;
}

/** `sync.max_delete`: "50%" of the tracked files, or a number of files. */
export type MaxDelete = { kind: 'percent'; value: number } | { kind: 'count'; value: number };

export const DEFAULT_MAX_DELETE = '50%';

export function parseMaxDelete(text: string): MaxDelete | undefined {
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(t);
  if (pct) {
    const value = Number(pct[1]);
    return value <= 100 ? { kind: 'percent', value } : undefined;
  }
  return /^\d+$/.test(t) ? { kind: 'count', value: Number(t) } : undefined;
}

/** Whether `deletions` out of `tracked` files go past the limit. */
export function exceedsMaxDelete(rule: MaxDelete, deletions: number, tracked: number): boolean {
  const limit = rule.kind === 'count' ? rule.value : (tracked * rule.value) / 100;
  return deletions > limit;
}

/** The pull decision of seed 001 §4.4-4.5: no state → full, old state → incremental, fresh → nothing. */
export type PullMode = 'full' | 'incremental' | 'fresh';

export function pullMode(lastSyncedAt: number | undefined, nowSeconds: number, staleThresholdMs: number): PullMode {
  if (lastSyncedAt === undefined || lastSyncedAt === 0) return 'full';
  return (nowSeconds - lastSyncedAt) * 1000 >= staleThresholdMs ? 'incremental' : 'fresh';
}

/** Version names are unix seconds; a new one is after every stored one. */
export function nextVersionName(nowSeconds: number, versions: readonly string[]): string {
  const newest = versions.length > 0 ? Number(versions[versions.length - 1]) : 0;
  return String(Math.max(nowSeconds, newest + 1));
}

export const VERSION_PATTERN = /^\d{1,15}$/;

export function sortVersions(names: Iterable<string>): string[] {
  return [...names].filter((n) => VERSION_PATTERN.test(n)).sort((a, b) => Number(a) - Number(b));
}

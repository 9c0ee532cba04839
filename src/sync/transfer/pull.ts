// `atlas sync pull`: the folder becomes a stored version (the newest unless --version), by checksum
// (seed 001 §3, §4): download what is new or changed, skip what is equal, delete what the store
// dropped, but only files the last sync tracked and nobody changed since. Everything is decided
// before anything changes; downloads are staged beside their targets and renamed once every one is
// verified; deletions come last.
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { formatDuration } from '../../domain/duration.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { Observation, PullPlan, SyncStats } from '../../domain/sync-plan.js';
import { DEFAULT_MAX_DELETE, emptyStats, exceedsMaxDelete, parseMaxDelete, planPull, pullMode } from '../../domain/sync-plan.js';
import type { FileEntry, Refusal, StateFile } from '../../domain/sync-state.js';
import { emptyState, pathsOfBoth, STATE_FORMAT_VERSION, splitOutsideLinks } from '../../domain/sync-state.js';
import { mkdirForPerson } from '../../store/private-umask.js';
import { silentProgress } from '../report/progress.js';
import { listed } from '../report/render.js';
import { readLocalState, withWorkspaceLock, writeLocalState } from '../scan/local-state.js';
import { deleteFiles, observePaths } from '../scan/safe-fs.js';
import { byPathOf } from '../scan/scan.js';
import type { SyncDeps } from '../stores/target.js';
import type { StoredVersion } from '../versions/versions.js';
import { resolveVersion } from '../versions/versions.js';
import { clearableFolders, splitDeletions } from './clear-folders.js';
import { relinkGroups } from './hardlinks.js';
import { writeEntries } from './materialize.js';
import { openFolders, setFolderModes, setFolderTimes } from './open-folders.js';
import { staged } from './staging.js';

export interface PullTreeOptions {
  root: string;
  tree: string;
  version?: string;
  /** Pull even when fresh, past sync.max_delete, and over files changed here. */
  force?: boolean;
}

function refusals(items: readonly Refusal[]): string {
  return listed(items.map((r) => `${JSON.stringify(r.path)} ${r.problem}`));
}

export function maxDeleteRule(value: string, warn: (text: string) => void) {
  const rule = parseMaxDelete(value);
  if (rule) return rule;
  warn(`sync.max_delete: expected a count or a percentage like 50%, got ${JSON.stringify(value)}; using ${DEFAULT_MAX_DELETE}`);
  return parseMaxDelete(DEFAULT_MAX_DELETE)!;
}

/** What a pull would do, with nothing changed: for `pull` itself and for `status`. */
export async function planPullOf(
  options: PullTreeOptions,
  deps: SyncDeps,
  previous: StateFile | undefined,
): Promise<{ stored?: StoredVersion; plan?: PullPlan; observed?: (path: string) => Observation; outside?: string[]; skipReason?: string }> {
  const { store, config, warn } = deps;
  const now = deps.now ?? Date.now;
  const mode = pullMode(previous?.last_synced_at, Math.floor(now() / 1000), config.sync.stale_threshold);
  if (mode === 'fresh' && !options.force && options.version === undefined) {
    const age = formatDuration(now() - previous!.last_synced_at * 1000);
    return {
      skipReason: `the last sync was ${age} ago, within sync.stale_threshold (${formatDuration(config.sync.stale_threshold)}): nothing to do (--force pulls anyway)`,
    };
  }
  const tracked = byPathOf(previous);
  const stored = await resolveVersion(store, options.tree, options.version, warn, tracked);
  if (!stored) return { skipReason: `${store.location} has no version of ${options.tree} yet: nothing to pull` };
  // A link is restored only when it stays inside the folder: a store saying otherwise is ignored.
  const { kept, outside } = splitOutsideLinks(stored.state.files);
  stored.state.files = kept;
  const observed = await observePaths(options.root, pathsOfBoth(stored.state.files, previous?.files ?? []), previous, tracked);
  return { stored, observed, outside: outside.map((f) => f.path), plan: planPull(stored.state.files, tracked, observed) };
}

export async function pullTree(options: PullTreeOptions, deps: SyncDeps): Promise<SyncStats> {
  const { root, tree } = options;
  const { store, warn } = deps;
  const progress = deps.progress ?? silentProgress;
  const now = deps.now ?? Date.now;
  const started = now();
  mkdirForPerson(root);
  return withWorkspaceLock(root, async () => {
    const stats = emptyStats('pull');
    const previous = await readLocalState(root, warn);
    const { stored, plan, observed, outside, skipReason } = await planPullOf(options, deps, previous);
    if (!stored || !plan || !observed) {
      stats.notes.push(skipReason!);
      stats.duration_ms = now() - started;
      return stats;
    }
    const where = `version ${stored.version} of ${tree} (${store.location})`;
    // --force: a folder holding only tracked, unchanged files gives way to the stored file.
    const { folders: cleared, refused } = options.force
      ? clearableFolders(root, plan, plan.delete)
      : { folders: [], refused: plan.refused };
    if (refused.length > 0) {
      throw new AtlasError(`refused to pull ${where}; nothing was changed:\n${refusals(refused)}`, {
        exitCode: EXIT.failure,
        hint: 'move the folder, file or symlink named above out of the way, then pull again',
      });
    }
    if (plan.conflicts.length > 0 && !options.force) {
      throw new AtlasError(
        `${plan.conflicts.length} file(s) here differ from ${where} and would be overwritten; nothing was changed:\n${refusals(plan.conflicts)}`,
        {
          exitCode: EXIT.failure,
          hint: 'push them first (atlas sync push), move them aside, or pull with --force to overwrite them',
        },
      );
    }
    const conflicting = new Set(plan.conflicts.map((c) => c.path));
    const replacing = new Set(cleared);
    const download = options.force
      ? [...plan.download, ...stored.state.files.filter((f) => conflicting.has(f.path) || replacing.has(f.path))]
      : plan.download;
    let deletions = plan.delete;
    if (deletions.length > 0 && stored.state.files.length === 0) {
      stats.notes.push(`${where} is empty: nothing was deleted (an empty version never deletes)`);
      deletions = [];
    }
    const tracked = previous?.files.length ?? 0;
    if (!options.force && exceedsMaxDelete(maxDeleteRule(deps.config.sync.max_delete, warn), deletions.length, tracked)) {
      throw new AtlasError(
        `pulling ${where} would delete ${deletions.length} of the ${tracked} files the last sync tracked, more than sync.max_delete (${deps.config.sync.max_delete}); nothing was changed`,
        {
          exitCode: EXIT.failure,
          hint: 'check the version (atlas sync versions, atlas sync status); pull with --force if the deletions are meant',
        },
      );
    }
    for (const k of plan.keep) stats.notes.push(`kept ${k.path}: ${k.problem}`);
    if (outside && outside.length > 0)
      stats.notes.push(`${outside.length} link(s) pointing outside the folder not restored: ${outside.slice(0, 5).join(', ')}`);
    if (download.length > 0 || deletions.length > 0) {
      // Until this pull ends, the folder is not "fresh": a pull cut off here runs again in full.
      writeLocalState(root, { ...(previous ?? emptyState()), last_synced_at: 0 });
    }
    // A read-only folder written inside is opened for the pull; its bits come back at the end.
    const opened = openFolders(root, pathsOf(download, deletions, stored.state.dirs ?? []));
    const { first, rest } = splitDeletions(deletions, cleared);
    stats.files_deleted = 0;
    try {
      // Every content is staged and checked before anything here changes (transfer/staging.ts).
      stats.bytes_transferred = await staged(
        root,
        download,
        (stage) => writeEntries(root, { store, tree, version: stored.version, where }, download, stored.state.dirs, progress, stage),
        async () => {
          stats.files_deleted = await deleteFiles(root, first);
        },
      );
    } catch (error) {
      setFolderModes(root, Object.fromEntries(opened));
      throw error;
    }
    restoreModes(root, plan.skip, observed);
    stats.files_downloaded = download.length;
    // Only after every download succeeded.
    stats.files_deleted += await deleteFiles(root, rest);
    await relinkGroups(root, stored.state);
    setFolderModes(root, { ...Object.fromEntries(opened), ...stored.state.dir_modes });
    setFolderTimes(root, stored.state.dir_times ?? {});
    stats.files_skipped = plan.skip.length;
    // The skipped entries are entries of the version, in its order: walked alongside, not looked up.
    let skipped = 0;
    writeLocalState(root, {
      version: STATE_FORMAT_VERSION,
      // When the pull began (as for a push): a file written meanwhile is hashed again next time.
      last_synced_at: Math.floor(started / 1000),
      // Nothing skipped (a pull into an empty folder): the version's own list, not a copy.
      files:
        plan.skip.length === 0
          ? stored.state.files
          : stored.state.files.map((f) => {
              if (plan.skip[skipped] !== f) return f;
              skipped++;
              return localEntry(f, observed(f.path));
            }),
      ...(stored.state.dirs ? { dirs: stored.state.dirs } : {}),
      ...(stored.state.dir_modes ? { dir_modes: stored.state.dir_modes } : {}),
      // A conflict version holds the newest version it conflicts with plus this side's files: pulled
      // to be resolved here, its push is based on that newest version, not on itself.
      synced_version: stored.state.conflict_of ?? stored.version,
    });
    stats.version = stored.version;
    stats.duration_ms = now() - started;
    return stats;
  });
}

/**
 * A skipped file keeps its local mtime in the local state, so the next scan can trust its checksum;
 * the stored entry itself when the times agree (100,000 copies are 7 MB at the end of a no-op pull).
 */
function localEntry(f: FileEntry, here: Observation): FileEntry {
  return here.kind === 'file' && here.modified_at !== f.modified_at ? { ...f, modified_at: here.modified_at } : f;
}

/** The paths of `entries`, then `more`, one at a time (no list of 100,000 made for one walk). */
function* pathsOf(entries: readonly FileEntry[], ...more: (readonly string[])[]): Generator<string> {
  for (const f of entries) yield f.path;
  for (const list of more) yield* list;
}

/** A file equal in content but not in mode (chmod +x on the other machine) gets the stored mode. */
function restoreModes(root: string, skipped: readonly FileEntry[], observed: (path: string) => Observation): void {
  for (const f of skipped) {
    const here = observed(f.path);
    if (f.mode !== undefined && here.kind === 'file' && here.mode !== f.mode) chmodSync(join(root, f.path), f.mode);
  }
}

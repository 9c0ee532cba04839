// `atlas sync push`: the folder becomes a new stored version. Contents the store lacks are sent
// once, as blobs named by their SHA-256; the version itself is one manifest, written last. When
// nothing changed, no version is made (seed 000 §3.2, seed 001 §5.2-5.3). A folder behind the
// store combines with its newer work, never replaces it (docs/sync.md#behind-the-store).

import { AtlasError, EXIT } from '../../domain/errors.js';
import { planReferences } from '../../domain/sync-manifest.js';
import { mergeWithStore } from '../../domain/sync-merge.js';
import { PACK_BELOW, placesOf } from '../../domain/sync-pack.js';
import type { SyncStats } from '../../domain/sync-plan.js';
import { emptyStats, planPush } from '../../domain/sync-plan.js';
import type { ExcludeRule, FileEntry, Refusal, StateFile } from '../../domain/sync-state.js';
import { pathProblem, STATE_FORMAT_VERSION, stateChunks } from '../../domain/sync-state.js';
import { unsafeDirs, unsafeEntries } from '../../domain/sync-unsafe.js';
import { silentProgress } from '../report/progress.js';
import { listed, someOf } from '../report/render.js';
import { readLocalState, withWorkspaceLock, writeLocalState } from '../scan/local-state.js';
import type { ScanResult } from '../scan/scan.js';
import { byPathOf, scanWorkspace } from '../scan/scan.js';
import type { SyncStore } from '../stores/store.js';
import type { SyncDeps } from '../stores/target.js';
import { requireFolder } from '../stores/target.js';
import { takeLease } from '../versions/locks.js';
import type { StoredVersion } from '../versions/versions.js';
import { latestVersion } from '../versions/versions.js';
import { commitNew, commonBase, reconcile } from './publish.js';
import { sendContents } from './upload.js';

export interface PushTreeOptions {
  root: string;
  tree: string;
  rules: readonly ExcludeRule[];
  /** Behind the store, with files changed on both sides: publish anyway (ours win those files). */
  force?: boolean;
  /** A file that changes under the push so that it cannot be read as one fails the push (else it keeps its previous entry). */
  strict?: boolean;
}

/** Pushes one folder as one tree; the caller has checked access to the store. */
export async function pushTree(options: PushTreeOptions, deps: SyncDeps): Promise<SyncStats> {
  const { root, tree } = options;
  const { store, warn } = deps;
  const progress = deps.progress ?? silentProgress;
  const now = deps.now ?? Date.now;
  const started = now();
  requireFolder(root);
  return withWorkspaceLock(root, async () => {
    const stats = emptyStats('push');
    // Listed first: a store that cannot be used fails before the folder is scanned.
    const names = await store.listVersionNames(tree);
    const previous = await readLocalState(root, warn);
    // The folder's own entries: the scan reuses their hashes, and the newest version's equal
    // entries are the same objects.
    const known = byPathOf(previous);
    const scan = await scanWorkspace(root, options.rules, previous, known);
    refuseUnreadable(root, scan.unreadable);
    refuseUnpullable(root, [
      ...unsafeEntries(scan.files),
      ...unsafeDirs(scan),
      ...scan.badNames.map((path) => ({ path, problem: pathProblem(path) ?? 'is not valid UTF-8' })),
    ]);
    if (scan.symlinks.length > 0)
      stats.notes.push(`${scan.symlinks.length} symlink(s) pointing outside the folder not synced: ${someOf(scan.symlinks)}`);
    if (scan.specials.length > 0)
      stats.notes.push(
        `${scan.specials.length} named pipe(s), socket(s) or device(s) not synced (they hold no content to store): ${someOf(scan.specials)}`,
      );
    const latest = await latestVersion(store, tree, names, warn, { known });
    known.clear();
    const combined = combineWithStore(
      scan,
      previous,
      latest,
      await sharedBase(store, tree, previous, latest, stats),
      stats,
      options.force === true,
    );
    const plan = planPush(combined.files, latest?.state.files, combined.dirs, latest?.state.dirs);
    // The sync's time is when its scan began, not when it ended: a file written while the push ran
    // has an mtime at or after it, so the next scan hashes it again instead of trusting the old MD5.
    const syncedAt = Math.floor(started / 1000);
    // The local state records what this folder holds: its own files, based on the version whose
    // changes it has (a combined push leaves the store's changes there until a pull).
    const local = (base: string | undefined, files = scan.files): StateFile => ({
      version: STATE_FORMAT_VERSION,
      last_synced_at: syncedAt,
      files,
      dirs: scan.dirs,
      dir_modes: scan.dir_modes,
      ...(base ? { synced_version: base } : {}),
    });
    const unchanged = plan.unchanged && sameModes(scan.dir_modes, latest?.state.dir_modes);
    if (combined.conflicts.length === 0 && (unchanged || (latest === undefined && scan.files.length === 0 && scan.dirs.length === 0))) {
      stats.files_skipped = scan.files.length;
      stats.notes.push(latest ? `nothing changed since version ${latest.version}: no new version` : 'the folder is empty: nothing to push');
      const base = combined.fromStore.length > 0 ? previous?.synced_version : latest?.version;
      // Rewritten only when it would say something new: a newer last_synced_at alone lets a later
      // scan trust more cached hashes, but every file here already was (2 MB of JSON on 10,000 files).
      if (!sameLocalState(previous, scan, base)) writeLocalState(root, local(base));
      stats.duration_ms = now() - started;
      return stats;
    }
    // From here the push reuses contents: no prune may collect them until its manifest names them.
    const lease = await takeLease(store, tree, warn);
    try {
      await stillThere(store, tree, latest);
      const sent = await sendContents(store, tree, root, plan.upload, scan.files, progress, options.strict === true);
      const files = atPrevious(withChanged(combined.files, sent.changed), sent.left, latest);
      if (sent.left.length > 0)
        stats.notes.push(
          `${sent.left.length} file(s) changed while they were being pushed and were left at their previous version (absent from it: not stored): ${someOf(sent.left)}`,
        );
      stats.files_uploaded = sent.files;
      stats.bytes_transferred = sent.bytes;
      stats.files_reused = combined.files.filter((f) => f.sha256 !== undefined).length - sent.files;
      locate(files, scan.files, latest);
      const manifest: StateFile = {
        version: STATE_FORMAT_VERSION,
        last_synced_at: syncedAt,
        files,
        dirs: combined.dirs,
        dir_modes: scan.dir_modes,
        dir_times: scan.dir_times,
        ...(scan.hardlinks.length > 0 ? { hardlinks: scan.hardlinks } : {}),
        ...(latest ? { parent: latest.version } : {}),
      };
      // Unchanged contents named by reference to the base's manifest when few changed.
      const references = planReferences(manifest.files, latest);
      if (references) manifest.sha256_from = references.base;
      // The manifest makes the version: whoever may refuse it (a lost lease) says so now.
      await deps.beforePublish?.();
      const seconds = () => Math.floor(now() / 1000);
      if (combined.conflicts.length > 0 && latest) {
        // Stored whole, never as the newest: nothing of the store's newer work is replaced.
        const stored = await commitNew(
          store,
          tree,
          () => stateChunks({ ...manifest, conflict_of: latest.version, conflicts: combined.conflicts }, references?.omit),
          seconds(),
          names,
        );
        throw conflictError(root, tree, stored, latest.version, combined.conflicts);
      }
      const version = await commitNew(store, tree, () => stateChunks(manifest, references?.omit), seconds(), names);
      // Another push may have published meanwhile: the newest version must hold both.
      const settled = await reconcile(
        store,
        tree,
        { version, state: manifest },
        { force: options.force === true, nowSeconds: seconds, ...(deps.beforePublish ? { beforePublish: deps.beforePublish } : {}) },
      );
      stats.notes.push(...settled.notes);
      writeLocalState(
        root,
        local(
          combined.fromStore.length > 0 ? latest?.version : version,
          atPrevious(withChanged(scan.files, sent.changed), sent.left, latest),
        ),
      );
      stats.version = settled.version;
    } finally {
      await lease.release();
      progress.finish();
    }
    stats.duration_ms = now() - started;
    return stats;
  });
}

/**
 * The version this push builds on was not removed by a prune that ended before the lease was
 * taken: its contents, which the push reuses, are then all still stored.
 */
async function stillThere(store: SyncStore, tree: string, latest: StoredVersion | undefined): Promise<void> {
  if (!latest || (await store.listVersionNames(tree)).includes(latest.version)) return;
  throw new AtlasError(
    `version ${latest.version} of ${tree}, which this push built on, was removed by a prune while the push ran; nothing was published`,
    { exitCode: EXIT.failure, hint: 'push again' },
  );
}

/** `files` with the entries of files that changed under the push in place of theirs (added when absent). */
function withChanged(files: FileEntry[], changed: readonly FileEntry[]): FileEntry[] {
  if (changed.length === 0) return files;
  const byPath = new Map(changed.map((e) => [e.path, e]));
  const replaced = files.map((f) => {
    const now = byPath.get(f.path);
    byPath.delete(f.path);
    return now ?? f;
  });
  return [...replaced, ...byPath.values()];
}

/**
 * `files` with each of `left` (files not read, as they changed under the push) at its entry in the
 * newest version, or left out when that has none: the version says what it held before.
 */
function atPrevious(files: FileEntry[], left: readonly string[], latest: StoredVersion | undefined): FileEntry[] {
  if (left.length === 0) return files;
  const paths = new Set(left);
  const before = new Map((latest?.state.files ?? []).filter((f) => paths.has(f.path)).map((f) => [f.path, f]));
  return files.flatMap((f) => (paths.has(f.path) ? (before.has(f.path) ? [before.get(f.path)!] : []) : [f]));
}

/**
 * The place of each packed content no entry of the manifest was read into (another file with that
 * content, or one the newest version holds), for the manifest: from an entry that names it, of the
 * manifest, of the scan (a holder read in place of one that changed) or of the newest version. An
 * entry equal to one of the newest version's has its place already (the same object). The entries
 * are this push's own; the folder's state never records a place (it is written as 'local').
 */
function locate(files: readonly FileEntry[], scanned: readonly FileEntry[], latest: StoredVersion | undefined): void {
  const unplaced = (f: FileEntry) => f.sha256 !== undefined && f.pack === undefined && f.size < PACK_BELOW;
  const wanted = new Set<string>();
  for (const f of files) if (unplaced(f)) wanted.add(f.sha256!);
  if (wanted.size === 0) return;
  const places = placesOf(wanted, files, scanned, latest?.state.files ?? []);
  for (const f of files) {
    const place = unplaced(f) ? places.get(f.sha256!) : undefined;
    if (place) Object.assign(f, place);
  }
}

/**
 * A file or folder this user may not read: stored without it, the version would say it was
 * deleted, and a pull elsewhere would delete it there. Nothing is pushed until it can be read.
 */
function refuseUnreadable(root: string, paths: readonly string[]): void {
  if (paths.length === 0) return;
  throw new AtlasError(
    `${root}: ${paths.length} file(s) or folder(s) cannot be read (permission denied), so nothing was pushed:\n${listed(paths.map((p) => JSON.stringify(p)))}`,
    {
      exitCode: EXIT.input,
      hint: 'give yourself read access to them (chmod u+r, and u+rx for a folder), or leave them out with sync.exclude',
    },
  );
}

/**
 * A name that a pull would refuse (a backslash, which a pull on another system would read as a
 * folder separator, or a control character) is refused here, naming the file: stored, it would make
 * the version damaged and every later pull and cold start of the workspace fail.
 */
function refuseUnpullable(root: string, refused: readonly Refusal[]): void {
  if (refused.length === 0) return;
  throw new AtlasError(
    `${root}: ${refused.length} file name${refused.length === 1 ? '' : 's'} cannot be stored (a pull would refuse ${refused.length === 1 ? 'it' : 'them'}), so nothing was pushed:\n${listed(refused.map((r) => `${JSON.stringify(r.path)} ${r.problem}`))}`,
    {
      exitCode: EXIT.input,
      hint: 'rename those files, or leave them out with sync.exclude',
    },
  );
}

interface Combined {
  files: FileEntry[];
  dirs: string[];
  conflicts: string[];
  fromStore: string[];
}

/**
 * The behind-the-store rule: when the store's newest version is not the one this folder last
 * synced, the push combines at the file level (the base is the local state: what this folder had
 * at its last sync). A folder whose last sync predates `synced_version` (an older atlas) has no
 * known base: its push replaces, as before, and says what it did not see.
 */
function combineWithStore(
  scan: ScanResult,
  previous: StateFile | undefined,
  latest: StoredVersion | undefined,
  older: StateFile | undefined,
  stats: SyncStats,
  force: boolean,
): Combined {
  const own: Combined = { files: scan.files, dirs: scan.dirs, conflicts: [], fromStore: [] };
  if (!latest || !previous || previous.synced_version === latest.version) return own;
  if (previous.synced_version === undefined) {
    const known = new Set([...previous.files, ...scan.files].map((f) => `${f.path}\0${f.checksum}`));
    const unseen = latest.state.files.filter((f) => !known.has(`${f.path}\0${f.checksum}`));
    if (unseen.length > 0)
      stats.notes.push(
        `version ${latest.version} had ${unseen.length} change(s) this folder never pulled (e.g. ${unseen[0]!.path}); they stay in that version (atlas sync pull --version ${latest.version})`,
      );
    return own;
  }
  const base = older ?? previous;
  const merge = mergeWithStore(scan.files, scan.dirs, latest.state.files, latest.state.dirs ?? [], base.files, base.dirs ?? []);
  // A file of an old-layout version has no blob to point at: it cannot be combined, only pulled.
  const unaddressed = merge.files
    .filter((f) => merge.fromStore.includes(f.path) && f.sha256 === undefined && f.link === undefined)
    .map((f) => f.path);
  const conflicts = force ? [] : [...new Set([...merge.conflicts, ...unaddressed])].sort();
  if (merge.fromStore.length > 0)
    stats.notes.push(
      `behind version ${latest.version}: combined with its ${merge.fromStore.length} change(s) this folder never pulled (e.g. ${merge.fromStore[0]}); pull to have them here`,
    );
  if (force && merge.conflicts.length > 0)
    stats.notes.push(
      `--force: ${merge.conflicts.length} file(s) changed here and in version ${latest.version} were published as they are here: ${merge.conflicts.slice(0, 5).join(', ')}`,
    );
  return { files: merge.files, dirs: merge.dirs, conflicts, fromStore: merge.fromStore };
}

/**
 * The newest version was built on one older than this folder's last sync (a concurrent push that
 * did not see it, whose combining has not run yet): it may lack what this folder published, so the
 * two are compared from that older version, which both hold. Undefined: the folder's state is the base.
 */
async function sharedBase(
  store: SyncStore,
  tree: string,
  previous: StateFile | undefined,
  latest: StoredVersion | undefined,
  stats: SyncStats,
): Promise<StateFile | undefined> {
  const parent = latest?.state.parent;
  const synced = previous?.synced_version;
  if (parent === undefined || synced === undefined || synced === latest!.version || Number(parent) >= Number(synced)) return undefined;
  return commonBase(store, tree, parent, stats.notes, "combined from this folder's last sync instead");
}

function conflictError(root: string, tree: string, version: string, newest: string, conflicts: readonly string[]): AtlasError {
  return new AtlasError(
    `${root} is behind version ${newest} of ${tree}, and ${conflicts.length} file(s) changed both here and there; this push was stored as version ${version}, which is not the newest:\n${listed(conflicts)}`,
    {
      exitCode: EXIT.conflict,
      hint: `compare them (atlas sync export --version ${newest} DIR), then push with --force to publish this folder's versions of them, or pull (--force) to take the store's`,
    },
  );
}

/** The same folders with the same permission bits (absent: none recorded). */
function sameModes(a: Readonly<Record<string, number>> | undefined, b: Readonly<Record<string, number>> | undefined): boolean {
  const ours = Object.entries(a ?? {});
  return ours.length === Object.keys(b ?? {}).length && ours.every(([path, mode]) => b?.[path] === mode);
}

/** The local state already records this scan: every hash came from it, same files, folders and base. */
function sameLocalState(previous: StateFile | undefined, scan: ScanResult, base: string | undefined): boolean {
  if (
    !previous ||
    scan.bytesHashed > 0 ||
    previous.synced_version !== base ||
    previous.files.length !== scan.files.length ||
    !sameModes(scan.dir_modes, previous.dir_modes)
  )
    return false;
  const dirs = previous.dirs ?? [];
  return dirs.length === scan.dirs.length && dirs.every((d, i) => d === scan.dirs[i]);
}

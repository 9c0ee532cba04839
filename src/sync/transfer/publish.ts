// Publishing a version while other pushes may publish too (docs/sync.md#concurrent-pushes). A store
// has no transaction across keys: a push lists, sends, then writes its manifest, and another push
// can publish in between. So a push publishes under a name nobody holds (a taken name is refused,
// never overwritten), then lists again. A version another push published meanwhile (newer than the
// one this push built on) may lack this push's changes, or this one theirs: the push combines them
// file by file, as the behind-the-store rule does, and publishes the combination as the newest
// version, then looks again, a bounded number of times. Two pushes that both combine publish the
// same files, and stop there.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { mergeWithStore } from '../../domain/sync-merge.js';
import { nextVersionName, sameEntry } from '../../domain/sync-plan.js';
import type { FileEntry, StateFile } from '../../domain/sync-state.js';
import { stateChunks } from '../../domain/sync-state.js';
import { listed } from '../report/render.js';
import type { SyncStore } from '../stores/store.js';
import type { StoredVersion } from '../versions/versions.js';
import { loadVersion } from '../versions/versions.js';

/** Attempts at a free name, and rounds of combining, before a push gives up (the store is that busy). */
const ROUNDS = 5;

function busy(tree: string, store: SyncStore): AtlasError {
  return new AtlasError(
    `${tree} in ${store.location}: other pushes kept publishing while this one tried to; its contents are stored, but it published no version`,
    { exitCode: EXIT.failure, hint: 'push again' },
  );
}

/** Writes a manifest under the first name from `nowSeconds` on that no version holds; that name. */
export async function commitNew(
  store: SyncStore,
  tree: string,
  manifest: () => Iterable<string>,
  nowSeconds: number,
  names: readonly string[],
): Promise<string> {
  let known = names;
  for (let round = 0; round < ROUNDS; round++) {
    const version = nextVersionName(nowSeconds, known);
    if (await store.commitVersion(tree, version, manifest())) return version;
    known = await store.listVersionNames(tree);
    if (!known.includes(version)) known = [...known, version];
  }
  throw busy(tree, store);
}

export interface Reconciled {
  /** The newest version once this push is done: its own, or the one that combined it with others'. */
  version: string;
  notes: string[];
}

/**
 * After `ours` (built on `parent`) was published: combines it with what other pushes published
 * meanwhile until the newest version holds every change of both. With `force`, files both changed
 * keep ours; otherwise theirs stay in the newest and the push fails with a conflict naming ours.
 */
export async function reconcile(
  store: SyncStore,
  tree: string,
  ours: { version: string; state: StateFile },
  options: { force: boolean; nowSeconds: () => number; beforePublish?: () => Promise<void> },
): Promise<Reconciled> {
  const own = ours.version;
  let current = ours;
  let parent = ours.state.parent;
  const notes: string[] = [];
  const conflicts = new Set<string>();
  let settled = false;
  for (let round = 0; round < ROUNDS && !settled; round++) {
    const names = await store.listVersionNames(tree);
    const rivals: StoredVersion[] = [];
    for (const name of names) {
      if (name === current.version || (parent !== undefined && Number(name) <= Number(parent))) continue;
      const loaded = await loadVersion(store, tree, name);
      // Unfinished (its push will look for ours when it publishes), damaged, or a conflict: no one's newest.
      if (loaded.ok && loaded.stored.state.conflict_of === undefined) rivals.push(loaded.stored);
    }
    if (rivals.length === 0) {
      settled = true;
      break;
    }
    const newest = rivals.reduce((a, b) => (Number(b.version) > Number(a.version) ? b : a), current);
    let files = current.state.files;
    let dirs = current.state.dirs ?? [];
    for (const rival of rivals) {
      // Both sides hold everything up to the older of the two versions they were built on.
      // Without one, nothing is common: a file both hold differently is a conflict, never a silent pick.
      const base = await commonBase(
        store,
        tree,
        olderOf(parent, rival.state.parent),
        notes,
        'combined as if the two had nothing in common',
      );
      const merge = mergeWithStore(files, dirs, rival.state.files, rival.state.dirs ?? [], base?.files ?? [], base?.dirs ?? []);
      files = options.force ? merge.files : theirsWhere(merge.files, merge.conflicts, rival.state.files);
      dirs = merge.dirs;
      for (const path of merge.conflicts) conflicts.add(path);
      notes.push(
        `another push published version ${rival.version} while this push ran${merge.fromStore.length > 0 ? `: combined with its ${merge.fromStore.length} change(s) (e.g. ${merge.fromStore[0]})` : ''}`,
      );
    }
    if (sameFiles(files, dirs, newest.state)) {
      current = newest;
      settled = true;
      break;
    }
    const state: StateFile = {
      version: ours.state.version,
      last_synced_at: ours.state.last_synced_at,
      files,
      dirs,
      ...(ours.state.dir_modes ? { dir_modes: ours.state.dir_modes } : {}),
      ...(ours.state.dir_times ? { dir_times: ours.state.dir_times } : {}),
      ...(ours.state.hardlinks ? { hardlinks: ours.state.hardlinks } : {}),
      parent: newest.version,
    };
    // A server's turn that lost its lease publishes nothing more (src/server/conversations/turn-lease.ts).
    await options.beforePublish?.();
    current = { version: await commitNew(store, tree, () => stateChunks(state), options.nowSeconds(), names), state };
    parent = newest.version;
    notes.push(`published version ${current.version}, which combines them with this push's version ${own}`);
  }
  if (!settled) throw busy(tree, store);
  if (conflicts.size > 0 && !options.force) throw concurrentConflict(tree, own, current.version, [...conflicts].sort(), notes);
  if (conflicts.size > 0)
    notes.push(
      `--force: ${conflicts.size} file(s) changed by both pushes were published as they are here: ${[...conflicts].slice(0, 5).join(', ')}`,
    );
  return { version: current.version, notes };
}

/**
 * The version both sides hold, read; undefined when there is none (the first push of a tree) or it
 * cannot be read (retention removed it: `instead` says what is done then, in the notes).
 */
export async function commonBase(
  store: SyncStore,
  tree: string,
  name: string | undefined,
  notes: string[],
  instead: string,
): Promise<StateFile | undefined> {
  if (name === undefined) return undefined;
  const loaded = await loadVersion(store, tree, name);
  if (loaded.ok) return loaded.stored.state;
  notes.push(`version ${name}, the base of the combination, ${loaded.problem}: ${instead}`);
  return undefined;
}

function olderOf(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Number(a) <= Number(b) ? a : b;
}

/** The combination with their entry (or its absence) at each conflicting path. */
function theirsWhere(files: readonly FileEntry[], conflicts: readonly string[], theirs: readonly FileEntry[]): FileEntry[] {
  if (conflicts.length === 0) return [...files];
  const at = new Set(conflicts);
  const kept = files.filter((f) => !at.has(f.path));
  for (const f of theirs) if (at.has(f.path)) kept.push(f);
  return kept;
}

/** `state` already holds these files (as a push compares them) and these empty folders. */
function sameFiles(files: readonly FileEntry[], dirs: readonly string[], state: StateFile): boolean {
  if (files.length !== state.files.length || dirs.length !== (state.dirs ?? []).length) return false;
  const there = new Map(state.files.map((f) => [f.path, f]));
  const theirDirs = new Set(state.dirs ?? []);
  return files.every((f) => there.has(f.path) && sameEntry(f, there.get(f.path)!)) && dirs.every((d) => theirDirs.has(d));
}

function concurrentConflict(tree: string, own: string, newest: string, paths: readonly string[], notes: readonly string[]): AtlasError {
  return new AtlasError(
    `${notes[0] ?? 'another push published while this push ran'}, and ${paths.length} file(s) changed in both: the newest version of ${tree}, ${newest}, keeps theirs; version ${own} keeps this push's:\n${listed(paths)}`,
    {
      exitCode: EXIT.conflict,
      hint: `compare them (atlas sync export --version ${own} DIR), then push with --force to publish this folder's versions of them, or pull (--force) to take the store's`,
    },
  );
}

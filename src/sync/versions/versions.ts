// Reading stored versions: the newest usable one (incomplete versions are skipped silently, damaged
// ones with a warning), a named one (strictly), and the list `atlas sync versions` shows.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { manifestProblem } from '../../domain/sync-check.js';
import type { ReferenceInfo } from '../../domain/sync-manifest.js';
import { ReferenceMerge, resolveReferences } from '../../domain/sync-manifest.js';
import type { VersionCondition } from '../../domain/sync-retention.js';
import type { FileEntry, Refusal, StateFile, StateParse } from '../../domain/sync-state.js';
import type { ParseOptions } from '../../domain/sync-state-parse.js';
import { unsafeDirs, unsafeEntries } from '../../domain/sync-unsafe.js';
import { parseReading } from '../scan/local-state.js';
import { mapPool } from '../scan/pool.js';
import type { SyncStore } from '../stores/store.js';

export interface StoredVersion {
  version: string;
  /** Resolved: every blob entry has its sha256, whether its manifest carried it or its base did. */
  state: StateFile;
  /** Set when the manifest left SHA-256s to a base (what the next push needs to refer to it too). */
  references?: ReferenceInfo;
}

export type Loaded = { ok: true; stored: StoredVersion } | { ok: false; missing: boolean; problem: string };

/** Bases already read, by version: `atlas sync versions` reads many manifests with one base. */
type BaseCache = Map<string, Promise<Loaded>>;

export interface Reading {
  bases?: BaseCache;
  /**
   * The folder's own entries, by path (its local state): an equal entry of the version is that
   * object, not a copy (ParseOptions' `known`): one set of entries in memory, not two.
   */
  known?: ReadonlyMap<string, FileEntry>;
  /**
   * Only the version's contents are wanted (a pull, an export): which entries took their SHA-256
   * from the base (`references`, what a push needs to refer to it too) is not recorded, a set of
   * 100,000 entries less.
   */
  contentsOnly?: boolean;
}

/** One version, resolved; what is wrong with it otherwise (missing: an unfinished push). */
export async function loadVersion(store: SyncStore, tree: string, version: string, reading: Reading = {}): Promise<Loaded> {
  const loaded = await loadOne(store, tree, version, reading.known);
  if (!loaded.ok || loaded.stored.state.sha256_from === undefined) return loaded;
  // One version read: its base merged in as it is read. Many (`atlas sync versions`): one base for all, read once.
  if (reading.bases === undefined) {
    const merged = await mergeBase(store, tree, version, loaded.stored.state, reading);
    if (merged !== undefined) return merged;
    // Out of path order (written by hand): the merge stopped midway, and both are read again whole.
    const again = await loadOne(store, tree, version, reading.known);
    if (!again.ok || again.stored.state.sha256_from === undefined) return again;
    return wholeBase(store, tree, version, again.stored.state, reading);
  }
  return wholeBase(store, tree, version, loaded.stored.state, reading);
}

/** `state` resolved against its base read whole (and kept in `reading.bases` for the next version). */
async function wholeBase(store: SyncStore, tree: string, version: string, state: StateFile, reading: Reading): Promise<Loaded> {
  const from = state.sha256_from!;
  let base = reading.bases?.get(from);
  if (!base) {
    base = loadOne(store, tree, from, reading.known);
    reading.bases?.set(from, base);
  }
  const got = await base;
  return withBase(version, state, got, reading, (base) => resolveReferences(state, version, base));
}

/**
 * `state` resolved against its base read a piece at a time (ReferenceMerge): the base's entries
 * never all held beside the version's (a pull of 100,000 files peaked 15-20 MB lower). Undefined
 * when either manifest is out of path order.
 */
async function mergeBase(store: SyncStore, tree: string, version: string, state: StateFile, reading: Reading): Promise<Loaded | undefined> {
  const merge = new ReferenceMerge(state, version, reading.contentsOnly ? undefined : new Set());
  if (!merge.inOrder) return undefined;
  const from = state.sha256_from!;
  const parsed = await readManifest(store, tree, from, { known: reading.known, each: (entry) => merge.take(entry) });
  if (!merge.inOrder) return undefined;
  const got = checked(store, tree, from, parsed, () => merge.unsafe.refusals());
  return withBase(version, state, got, reading, (base) => merge.finish(base));
}

/** The version once its base is read (`got`), resolved against it when the base is fine. */
function withBase(
  version: string,
  state: StateFile,
  got: Loaded,
  reading: Reading,
  resolve: (base: StateFile) => ReturnType<ReferenceMerge['finish']>,
): Loaded {
  const from = state.sha256_from!;
  if (!got.ok) return { ok: false, missing: false, problem: `refers to the contents of version ${from}, which ${got.problem}` };
  const resolved = resolve(got.stored.state);
  if (!resolved.ok) return { ok: false, missing: false, problem: `has a corrupt .sandbox-state (${resolved.problem})` };
  const { byReference } = resolved;
  const references = byReference && !reading.contentsOnly ? { references: { base: from, byReference } } : {};
  return { ok: true, stored: { version, state: resolved.state, ...references } };
}

/** A version's manifest parsed as it is read (`parseReading`), or undefined when it has none. */
export function readManifest(store: SyncStore, tree: string, version: string, options: ParseOptions = {}): Promise<StateParse | undefined> {
  return parseReading(() => store.readState(tree, version), options);
}

async function loadOne(store: SyncStore, tree: string, version: string, known: Reading['known']): Promise<Loaded> {
  const parsed = await readManifest(store, tree, version, { known });
  return checked(store, tree, version, parsed, (state) => unsafeEntries(state.files));
}

/**
 * A version's manifest as read (`parsed`), checked: missing, corrupt, newer than this atlas (an
 * error), or listing paths atlas refuses to write (its entries' by `unsafeFiles`, then its folders').
 */
function checked(
  store: SyncStore,
  tree: string,
  version: string,
  parsed: StateParse | undefined,
  unsafeFiles: (state: StateFile) => Refusal[],
): Loaded {
  if (parsed === undefined) return { ok: false, missing: true, problem: 'has no .sandbox-state (an unfinished push)' };
  if (!parsed.ok) {
    if (parsed.kind === 'newer') {
      throw new AtlasError(`version ${version} of ${tree} in ${store.location}: ${parsed.problem}`, {
        exitCode: EXIT.input,
        hint: 'upgrade atlas on this machine',
      });
    }
    return { ok: false, missing: false, problem: `has a corrupt .sandbox-state (${parsed.problem})` };
  }
  const unsafe = [...unsafeFiles(parsed.state), ...unsafeDirs(parsed.state)];
  if (unsafe.length > 0) {
    const list = unsafe
      .slice(0, 10)
      .map((r) => `${JSON.stringify(r.path)} ${r.problem}`)
      .join('; ');
    return {
      ok: false,
      missing: false,
      problem: `lists paths atlas refuses to write: ${list}${unsafe.length > 10 ? ` (and ${unsafe.length - 10} more)` : ''}`,
    };
  }
  return { ok: true, stored: { version, state: parsed.state } };
}

/**
 * The newest complete version (unfinished pushes are passed over), or undefined when the tree has
 * none. A damaged or hostile one stops a pull (`strict`): the store was changed outside atlas, and
 * quietly restoring an older version would hide it. A push only needs a base to reuse files from,
 * so it passes over such a version with a warning (its new version supersedes it).
 */
export async function latestVersion(
  store: SyncStore,
  tree: string,
  names: readonly string[],
  warn: (text: string) => void,
  options: { strict?: boolean } & Omit<Reading, 'bases'> = {},
): Promise<StoredVersion | undefined> {
  const { strict = false, ...reading } = options;
  for (let i = names.length - 1; i >= 0; i--) {
    const loaded = await loadVersion(store, tree, names[i]!, reading);
    // A push behind the store stored its conflicting files here: whole, but not the newest work.
    if (loaded.ok && loaded.stored.state.conflict_of !== undefined) continue;
    if (loaded.ok) return loaded.stored;
    if (loaded.missing) continue;
    const problem = `version ${names[i]} of ${tree} in ${store.location} ${loaded.problem}`;
    if (strict) {
      throw new AtlasError(`${problem}; refused, nothing was changed`, {
        exitCode: EXIT.failure,
        hint: 'pull an older version (atlas sync versions, then --version TS), or push a good copy to supersede it',
      });
    }
    warn(`passing over ${problem}`);
  }
  return undefined;
}

/** A version the person named: any problem with it is an error (no silent fallback). */
export async function namedVersion(store: SyncStore, tree: string, version: string, reading: Reading = {}): Promise<StoredVersion> {
  const loaded = await loadVersion(store, tree, version, reading);
  if (loaded.ok) return loaded.stored;
  throw new AtlasError(
    loaded.missing
      ? `version ${version} of ${tree} is not in ${store.location}`
      : `version ${version} of ${tree} in ${store.location} ${loaded.problem}; refused`,
    { exitCode: loaded.missing ? EXIT.notFound : EXIT.failure, hint: 'run `atlas sync versions` to list the stored versions' },
  );
}

export interface VersionInfo {
  version: string;
  created_at: string;
  files: number;
  bytes: number;
  status: 'complete' | 'conflict' | 'incomplete' | 'damaged';
  problem?: string;
  /** The version its push built on (docs/sync.md#concurrent-pushes); absent for the first, and for versions of older atlas. */
  parent?: string;
}

export async function describeVersions(store: SyncStore, tree: string): Promise<VersionInfo[]> {
  const names = await store.listVersionNames(tree);
  const bases: BaseCache = new Map();
  // One listing of the contents: each version's entries are checked against it (domain/sync-check.ts).
  const blobs = names.length > 0 ? await store.listBlobs(tree) : new Map<string, { size: number }>();
  return mapPool(names, 8, async (version) => {
    const created_at = new Date(Number(version) * 1000).toISOString();
    const loaded = await loadVersion(store, tree, version, { bases });
    if (!loaded.ok)
      return { version, created_at, files: 0, bytes: 0, status: loaded.missing ? 'incomplete' : 'damaged', problem: loaded.problem };
    const damage = manifestProblem(loaded.stored.state.files, blobs);
    if (damage !== undefined)
      return { version, created_at, files: loaded.stored.state.files.length, bytes: 0, status: 'damaged', problem: damage };
    const { files, conflict_of, conflicts, parent } = loaded.stored.state;
    const info: VersionInfo = {
      version,
      created_at,
      files: files.length,
      bytes: files.reduce((n, f) => n + f.size, 0),
      status: conflict_of === undefined ? 'complete' : 'conflict',
      ...(parent !== undefined ? { parent } : {}),
    };
    if (conflict_of !== undefined)
      info.problem = `a push behind version ${conflict_of} that changed ${conflicts?.length ?? 0} file(s) it changed too: ${(conflicts ?? []).slice(0, 5).join(', ')}`;
    return info;
  });
}

/**
 * How retention sees a version: complete (a whole version, one written by a newer atlas
 * included), a conflict (whole, but never the newest), incomplete (no `.sandbox-state`) or damaged
 * (a corrupt or hostile one); and the version its manifest refers to for contents, which must stay.
 */
export async function versionCondition(
  store: SyncStore,
  tree: string,
  version: string,
): Promise<{ condition: VersionCondition; base?: string }> {
  const parsed = await readManifest(store, tree, version);
  if (parsed === undefined) return { condition: 'incomplete' };
  if (!parsed.ok) return { condition: parsed.kind === 'newer' ? 'complete' : 'damaged' };
  const base = parsed.state.sha256_from !== undefined ? { base: parsed.state.sha256_from } : {};
  if (unsafeEntries(parsed.state.files).length > 0 || unsafeDirs(parsed.state).length > 0) return { condition: 'damaged', ...base };
  return { condition: parsed.state.conflict_of !== undefined ? 'conflict' : 'complete', ...base };
}

/** The version a pull or an export reads (its contents only): the one named, else the newest complete one. */
export async function resolveVersion(
  store: SyncStore,
  tree: string,
  version: string | undefined,
  warn: (text: string) => void,
  known?: Reading['known'],
): Promise<StoredVersion | undefined> {
  return version !== undefined
    ? namedVersion(store, tree, version, { known, contentsOnly: true })
    : latestVersion(store, tree, await store.listVersionNames(tree), warn, { strict: true, known, contentsOnly: true });
}

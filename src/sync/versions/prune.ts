// `atlas sync prune` and `sync.keep_versions`: removes old versions of a workspace's tree (and of a
// task's own folder), keeping the newest N complete ones, by the rules in domain/sync-retention.ts.
import { existsSync } from 'node:fs';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { VersionCondition } from '../../domain/sync-retention.js';
import { INCOMPLETE_GRACE_SECONDS, planRetention } from '../../domain/sync-retention.js';
import { withWorkspaceLock } from '../scan/local-state.js';
import type { RemovedVersion } from '../stores/store.js';
import { taskTree } from '../stores/store.js';
import type { SyncDeps, SyncTarget } from '../stores/target.js';
import type { CollectedBlobs } from './gc.js';
import { collectBlobs } from './gc.js';
import { underPruneLock } from './locks.js';
import { versionCondition } from './versions.js';

export interface TreePrune {
  tree: string;
  /** The complete versions kept, oldest first. */
  kept: string[];
  /** Removed (or, in a dry run, to be removed), oldest first. */
  removed: (RemovedVersion & { version: string })[];
  /** Old incomplete versions left alone because a push may still be writing them. */
  spared: { version: string; reason: string }[];
  /** Contents no remaining version uses, removed once past the grace period. */
  blobs: CollectedBlobs;
}

export interface PruneResult {
  location: string;
  workspace: string;
  keep: number;
  dry_run: boolean;
  trees: TreePrune[];
  removed: { versions: number; objects: number; bytes: number; blobs: number; blob_bytes: number };
  duration_ms: number;
}

/** How many versions to keep: --keep, else sync.keep_versions; neither (or < 1) is refused. */
export function resolveKeep(flag: number | undefined, config: Config): number {
  const keep = flag ?? config.sync.keep_versions;
  if (Number.isInteger(keep) && keep >= 1) return keep;
  const what =
    flag !== undefined
      ? `--keep ${flag}: at least the newest version is always kept`
      : 'nothing says how many versions to keep (sync.keep_versions is 0: keep all)';
  throw new AtlasError(`${what}; refused, nothing was removed`, {
    exitCode: EXIT.input,
    hint: 'pass --keep N (N >= 1), or set sync.keep_versions in config.yaml; --dry-run shows what would go',
  });
}

export async function syncPrune(target: SyncTarget, deps: SyncDeps, options: { keep?: number; dryRun?: boolean }): Promise<PruneResult> {
  const keep = resolveKeep(options.keep, deps.config);
  await deps.store.checkAccess();
  return pruneTarget(target, deps, keep, options.dryRun === true, true);
}

/** Prunes the workspace's tree and, with a task, the task's folder tree; the caller checked access. */
export async function pruneTarget(
  target: SyncTarget,
  deps: SyncDeps,
  keep: number,
  dryRun: boolean,
  collect = false,
): Promise<PruneResult> {
  const now = deps.now ?? Date.now;
  const started = now();
  const trees: { tree: string; folder: string | undefined }[] = [{ tree: target.tree, folder: target.named ? undefined : target.root }];
  if (target.task) trees.push({ tree: taskTree(target.workspace, target.task.id), folder: target.task.dir });
  const results: TreePrune[] = [];
  for (const { tree, folder } of trees) {
    const run = () => pruneTree(tree, deps, keep, dryRun, now, collect);
    // Taken like a push or pull of that folder takes it, when this machine has the folder; a dry
    // run changes nothing and takes no lock.
    results.push(dryRun || folder === undefined || !existsSync(folder) ? await run() : await withWorkspaceLock(folder, run));
  }
  const removed = results.flatMap((t) => t.removed);
  return {
    location: deps.store.location,
    workspace: target.workspace,
    keep,
    dry_run: dryRun,
    trees: results,
    removed: {
      versions: removed.length,
      objects: removed.reduce((n, r) => n + r.objects, 0),
      bytes: removed.reduce((n, r) => n + r.bytes, 0),
      blobs: results.reduce((n, t) => n + t.blobs.removed, 0),
      blob_bytes: results.reduce((n, t) => n + t.blobs.bytes, 0),
    },
    duration_ms: now() - started,
  };
}

async function pruneTree(
  tree: string,
  deps: SyncDeps,
  keep: number,
  dryRun: boolean,
  now: () => number,
  collect: boolean,
): Promise<TreePrune> {
  const { store } = deps;
  const names = await store.listVersionNames(tree);
  const nowSeconds = Math.floor(now() / 1000);
  // Newest first: states are read until `keep` complete versions are found, then only for
  // versions young enough to be a push under way. Older ones go whatever their state says, so
  // their (possibly large) states are never downloaded.
  const conditions = new Map<string, VersionCondition>();
  const bases = new Map<string, string>();
  const checked = new Map<string, Promise<boolean>>();
  const usableBase = (base: string): Promise<boolean> => {
    if (!checked.has(base))
      checked.set(
        base,
        versionCondition(store, tree, base).then((b) => b.base === undefined && (b.condition === 'complete' || b.condition === 'conflict')),
      );
    return checked.get(base)!;
  };
  let complete = 0;
  for (let i = names.length - 1; i >= 0; i--) {
    const version = names[i]!;
    if (complete >= keep && nowSeconds - Number(version) > INCOMPLETE_GRACE_SECONDS) break;
    const read = await versionCondition(store, tree, version);
    const { base } = read;
    // A version whose contents are named from a base that is gone, damaged or itself referring
    // cannot be pulled: it never counts as one of the newest N.
    const condition = base !== undefined && !(await usableBase(base)) ? 'damaged' : read.condition;
    conditions.set(version, condition);
    if (base !== undefined) bases.set(version, base);
    if (condition === 'complete') complete++;
  }
  const plan = planRetention(
    names,
    (v) => conditions.get(v),
    keep,
    nowSeconds,
    (v) => bases.get(v),
  );
  const remove = async (): Promise<TreePrune> => {
    const removed = await removeVersions(tree, deps, plan.remove, dryRun);
    // Contents go after the manifests that used them, never before: a reader never finds a version
    // whose blobs are gone. After a push, only when a version went (a listing of every blob costs).
    // Blob ages are the store's clock against this machine's, never a test's version clock.
    const gone = new Set(plan.remove);
    const blobs =
      collect || removed.length > 0
        ? await collectBlobs(
            store,
            tree,
            names.filter((v) => !gone.has(v)),
            (deps.storeNow ?? Date.now)(),
            dryRun,
          )
        : { removed: 0, bytes: 0, young: 0 };
    return { tree, kept: plan.kept, removed, spared: plan.spared, blobs };
  };
  if (dryRun || (plan.remove.length === 0 && !collect)) return remove();
  // A push under way may be about to name what this would remove: nothing goes (versions/locks.ts).
  return underPruneLock(store, tree, remove, (lease) => ({
    tree,
    kept: plan.kept,
    removed: [],
    spared: [...plan.spared, ...plan.remove.map((version) => ({ version, reason: 'a push is under way: left for a later prune' }))],
    blobs: {
      removed: 0,
      bytes: 0,
      young: 0,
      skipped: `no version or content was removed: a push of ${tree} is under way (${lease}); prune again once it ends`,
    },
  }));
}

async function removeVersions(tree: string, deps: SyncDeps, versions: readonly string[], dryRun: boolean): Promise<TreePrune['removed']> {
  const { store } = deps;
  const removed: TreePrune['removed'] = [];
  for (const version of versions) {
    try {
      removed.push({ version, ...(await store.removeVersion(tree, version, { dryRun })) });
    } catch (error) {
      const cause = error instanceof AtlasError ? error : undefined;
      const before = removed.length > 0 ? `after removing ${removed.map((r) => r.version).join(', ')}, ` : '';
      throw new AtlasError(
        `pruning ${tree} in ${store.location}: ${before}version ${version} could not be removed: ${(error as Error).message}`,
        {
          exitCode: cause?.exitCode ?? EXIT.failure,
          hint: cause?.hint ?? 'run the command again: a version removed halfway has no .sandbox-state and is never pulled',
          cause: error,
        },
      );
    }
  }
  return removed;
}

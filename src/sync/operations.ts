// The sync commands' work, for the CLI and the lifecycle hooks: push (the folder, and a task's own
// folder with it), pull, status (what push and pull would do, changing nothing), versions.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { SyncStats } from '../domain/sync-plan.js';
import { emptyStats, planPush } from '../domain/sync-plan.js';
import { readLocalState, statePath } from './scan/local-state.js';
import { scanWorkspace } from './scan/scan.js';
import { taskTree } from './stores/store.js';
import type { SyncDeps, SyncTarget } from './stores/target.js';
import { excludeRules, requireFolder, TASK_FOLDER_EXCLUDES } from './stores/target.js';
import { planPullOf, pullTree } from './transfer/pull.js';
import { pushTree } from './transfer/push.js';
import type { PruneResult } from './versions/prune.js';
import { pruneTarget } from './versions/prune.js';
import type { VersionInfo } from './versions/versions.js';
import { describeVersions, latestVersion } from './versions/versions.js';

export interface PushResult {
  location: string;
  workspace: string;
  root: string;
  stats: SyncStats;
  /** The task's own folder (hook.json, HOOK.md, task.json, conversations, artifacts). */
  task?: { id: string; stats: SyncStats };
  /** With sync.keep_versions > 0, what the prune after the push removed. */
  pruned?: PruneResult;
  /** The prune after the push failed (a warning: the push itself succeeded). */
  prune_failed?: string;
}

export async function syncPush(
  target: SyncTarget,
  deps: SyncDeps,
  options: { force?: boolean; strict?: boolean } = {},
): Promise<PushResult> {
  // A push lists the tree's versions before anything else: that listing is the bucket's check.
  await deps.store.checkAccess({ listing: false });
  const force = options.force === true;
  let conflict: unknown;
  const strict = options.strict === true;
  const stats = await pushTree({ root: target.root, tree: target.tree, rules: excludeRules(deps.config), force, strict }, deps).catch(
    (error: unknown) => {
      // The task's folder (its conversation) still goes: the workspace's conflict is reported after.
      if (!(error instanceof AtlasError && error.exitCode === EXIT.conflict) || !target.task) throw error;
      conflict = error;
      return undefined;
    },
  );
  const result: PushResult = {
    location: deps.store.location,
    workspace: target.workspace,
    root: target.root,
    stats: stats ?? emptyStats('push'),
  };
  if (target.task) {
    const taskStats = await pushTree(
      {
        root: target.task.dir,
        tree: taskTree(target.workspace, target.task.id),
        rules: excludeRules({ ...deps.config, sync: { ...deps.config.sync, exclude: [] } }, TASK_FOLDER_EXCLUDES),
        force,
        strict,
      },
      { ...deps, progress: undefined },
    );
    await deps.store.putTaskIndex(target.task.id, target.workspace);
    result.task = { id: target.task.id, stats: taskStats };
  }
  if (conflict) throw conflict;
  await pruneAfterPush(target, deps, result);
  return result;
}

/** sync.keep_versions: after a push that made a version; a failure is a warning, never the push's. */
async function pruneAfterPush(target: SyncTarget, deps: SyncDeps, result: PushResult): Promise<void> {
  const keep = deps.config.sync.keep_versions;
  if (keep < 1 || (result.stats.version === null && (result.task?.stats.version ?? null) === null)) return;
  try {
    result.pruned = await pruneTarget(target, { ...deps, progress: undefined }, keep, false);
  } catch (error) {
    result.prune_failed = `the push succeeded, but removing old versions (sync.keep_versions: ${keep}) failed: ${(error as Error).message}`;
    const hint = error instanceof AtlasError ? error.hint : undefined;
    deps.warn(`${result.prune_failed}${hint ? ` (${hint})` : ''}`);
  }
}

export interface PullResult {
  location: string;
  workspace: string;
  root: string;
  stats: SyncStats;
}

export async function syncPull(target: SyncTarget, deps: SyncDeps, options: { version?: string; force?: boolean }): Promise<PullResult> {
  await deps.store.checkAccess({ reading: true });
  const stats = await pullTree({ root: target.root, tree: target.tree, ...options }, deps);
  return { location: deps.store.location, workspace: target.workspace, root: target.root, stats };
}

export interface SyncStatus {
  location: string;
  workspace: string;
  root: string;
  state_file: string;
  last_synced_at: number | null;
  latest_version: string | null;
  /** `unreadable`: files and folders this user may not read, which a push refuses. */
  push: { new_version: boolean; upload: number; upload_bytes: number; reuse: number; removed: number; unreadable: string[] };
  pull: {
    skipped_because: string | null;
    download: number;
    download_bytes: number;
    delete: number;
    skip: number;
    keep: number;
    conflicts: string[];
    refused: string[];
  };
}

/** What push and pull would do now. Reads only: no lock, no state written, no temp file removed. */
export async function syncStatus(target: SyncTarget, deps: SyncDeps): Promise<SyncStatus> {
  await deps.store.checkAccess({ reading: true });
  requireFolder(target.root);
  const previous = await readLocalState(target.root, deps.warn);
  const scan = await scanWorkspace(target.root, excludeRules(deps.config), previous);
  const latest = await latestVersion(deps.store, target.tree, await deps.store.listVersionNames(target.tree), deps.warn);
  const push = planPush(scan.files, latest?.state.files, scan.dirs, latest?.state.dirs);
  const { plan, skipReason } = await planPullOf({ root: target.root, tree: target.tree }, deps, previous);
  return {
    location: deps.store.location,
    workspace: target.workspace,
    root: target.root,
    state_file: statePath(target.root),
    last_synced_at: previous && previous.last_synced_at > 0 ? previous.last_synced_at : null,
    latest_version: latest?.version ?? null,
    push: {
      new_version: !push.unchanged && (latest !== undefined || scan.files.length > 0 || scan.dirs.length > 0),
      upload: push.upload.length,
      upload_bytes: push.upload.reduce((n, f) => n + f.size, 0),
      reuse: push.reused,
      removed: push.removed,
      unreadable: scan.unreadable,
    },
    pull: {
      skipped_because: skipReason ?? null,
      download: plan?.download.length ?? 0,
      download_bytes: plan?.download.reduce((n, f) => n + f.size, 0) ?? 0,
      delete: plan?.delete.length ?? 0,
      skip: plan?.skip.length ?? 0,
      keep: plan?.keep.length ?? 0,
      conflicts: plan?.conflicts.map((c) => c.path) ?? [],
      refused: plan?.refused.map((r) => `${r.path}: ${r.problem}`) ?? [],
    },
  };
}

export async function syncVersions(
  target: Pick<SyncTarget, 'tree' | 'workspace'>,
  deps: Pick<SyncDeps, 'store'>,
): Promise<{ location: string; workspace: string; versions: VersionInfo[] }> {
  await deps.store.checkAccess({ reading: true });
  return { location: deps.store.location, workspace: target.workspace, versions: await describeVersions(deps.store, target.tree) };
}

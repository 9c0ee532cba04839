// The two sync actions the built-in lifecycle hooks call (seed 001 §2, §5; docs/sync.md):
// OnColdStart restores the task's working tree from the store before the agent runs (critical:
// a failure throws and the step must not start); OnStreamFinish pushes a new version after each
// agent run (non-critical: never throws, reports what went wrong). Both do nothing unless
// `sync.store` is set explicitly (the commands' default store is not used by the hooks).
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { SyncStats } from '../domain/sync-plan.js';
import { byPath } from '../domain/sync-state.js';
import type { PullResult, PushResult } from './operations.js';
import { syncPull, syncPush } from './operations.js';
import { readLocalState } from './scan/local-state.js';
import { openStore } from './stores/open-store.js';
import type { SyncStore } from './stores/store.js';
import type { SyncTarget } from './stores/target.js';
import { targetOfTask } from './stores/target.js';
import { latestVersion } from './versions/versions.js';

export interface LifecycleSyncInput {
  home: string;
  /** The task's effective configuration (sync.*). */
  config: Config;
  taskId: string;
  /** What is synced when it is not the task's working tree (a server conversation's workspace). */
  target?: SyncTarget;
  /** Where notes go (warnings of the sync itself). */
  warn?: (text: string) => void;
  /** Checked right before a push publishes its version; throwing refuses it (SyncDeps.beforePublish). */
  beforePublish?: () => Promise<void>;
}

/**
 * The store's newest version when it was pushed after this folder last synced (another machine,
 * or another server of the same conversation, went on from here): the folder is behind, however
 * recently it synced, and must not be trusted as it is.
 */
export async function newerInStore(target: SyncTarget, store: SyncStore, warn: (text: string) => void): Promise<string | undefined> {
  const local = await readLocalState(target.root, warn);
  if (!local || local.last_synced_at === 0) return undefined; // never synced or cut off: a full pull anyway
  const newest = await latestVersion(store, target.tree, await store.listVersionNames(target.tree), warn);
  if (!newest || newest.state.last_synced_at < local.last_synced_at) return undefined;
  // Times are whole seconds: in the same second, the version is another one if its files differ.
  const same = (a: typeof local.files, b: typeof local.files) =>
    a.length === b.length && a.every((f, i) => f.path === b[i]!.path && f.checksum === b[i]!.checksum);
  const sorted = (files: typeof local.files) => [...files].sort(byPath);
  if (newest.state.last_synced_at === local.last_synced_at && same(sorted(newest.state.files), sorted(local.files))) return undefined;
  return newest.version;
}

/**
 * OnColdStart: with `sync.store` set and `sync.init_from_store: true`, pulls the newest stored
 * version into the task's working tree (by the staleness rule: a fresh workspace is left alone,
 * unless the store holds a version pushed after its last sync: then that version is pulled).
 * Returns undefined when the hook is off. Throws an AtlasError naming the task, the store and
 * what failed.
 */
export async function restoreWorkspaceOnColdStart(input: LifecycleSyncInput & { version?: string }): Promise<PullResult | undefined> {
  const { config } = input;
  if (config.sync.store.trim() === '' || !config.sync.init_from_store) return undefined;
  try {
    const target = input.target ?? targetOfTask(input.taskId, input.home);
    const store = await openStore(config, input.home);
    const warn = input.warn ?? (() => undefined);
    const version = input.version ?? (await newerInStore(target, store, warn));
    return await syncPull(target, { store, config, warn }, version !== undefined ? { version } : {});
  } catch (error) {
    const cause = error instanceof AtlasError ? error : undefined;
    throw new AtlasError(
      `OnColdStart: restoring the workspace of ${label(input)} from ${config.sync.store} failed, so the step did not start: ${(error as Error).message}`,
      {
        exitCode: cause?.exitCode ?? EXIT.failure,
        hint: cause?.hint ?? 'fix the store (atlas sync status shows what a pull would do), or set sync.init_from_store: false',
        cause: error,
      },
    );
  }
}

export type StreamFinishPush =
  | { status: 'off' }
  | { status: 'pushed'; result: PushResult }
  | { status: 'failed'; error: string; hint?: string };

/** OnStreamFinish: pushes a new version of the task's working tree (and its folder). Never throws. */
export async function pushWorkspaceOnStreamFinish(input: LifecycleSyncInput): Promise<StreamFinishPush> {
  const { config } = input;
  if (config.sync.store.trim() === '') return { status: 'off' };
  try {
    const target = input.target ?? targetOfTask(input.taskId, input.home);
    const store = await openStore(config, input.home);
    return {
      status: 'pushed',
      result: await syncPush(target, {
        store,
        config,
        warn: input.warn ?? (() => undefined),
        ...(input.beforePublish ? { beforePublish: input.beforePublish } : {}),
      }),
    };
  } catch (error) {
    const hint = error instanceof AtlasError ? error.hint : undefined;
    return {
      status: 'failed',
      error: `OnStreamFinish: pushing the workspace of ${label(input)} to ${config.sync.store} failed: ${(error as Error).message}`,
      ...(hint ? { hint } : {}),
    };
  }
}

function label(input: LifecycleSyncInput): string {
  return input.target ? input.target.workspace : input.taskId;
}

/** One line for a log: what a lifecycle sync did. */
export function describeSync(stats: SyncStats): string {
  const moved =
    stats.direction === 'push'
      ? `${stats.files_uploaded} uploaded, ${stats.files_reused} reused`
      : `${stats.files_downloaded} downloaded, ${stats.files_deleted} deleted`;
  return `${stats.direction} ${stats.version ?? '(nothing to do)'}: ${moved}, ${stats.files_skipped} skipped, ${stats.bytes_transferred} bytes in ${stats.duration_ms} ms`;
}

// What the four `atlas sync` commands share: the target from --task/--dir, the configuration of
// its repository, the store, and a progress line on a terminal.
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import type { Config } from '../../config/schema.js';
import { readTask } from '../../store/task-store.js';
import { terminalProgress } from '../../sync/report/progress.js';
import { openStore } from '../../sync/stores/open-store.js';
import type { SyncDeps, SyncTarget, TargetFlags } from '../../sync/stores/target.js';
import { resolveTarget } from '../../sync/stores/target.js';
import type { CliContext } from '../context.js';

export type SyncFlags = TargetFlags;

/**
 * A sync holds every entry of the workspace for a few seconds and makes garbage fast, and V8 then
 * lets its heap grow to up to 4 times what is live before a full collection: at 100,000 files the
 * peak was 3 times what the sync held. Growth of at most 1.5 times cut each phase's peak by 30-50
 * MB there, for 5-8% more time in a no-op sync; 1.2 times cut a pull into an empty folder by 24 MB
 * more (153-157 to 129-132 MB, s3rver) and a first push by 15 MB (152 to 136 MB), for 3% more
 * time in a no-op pull (docs/performance.md#workspace-sync). V8 reads the setting at each collection.
 */
const HEAP_GROWTH = '--heap-growing-percent=20';

/** Past this much live heap the sync is a large one, and its heap grows by HEAP_GROWTH from then on. */
const LARGE_HEAP = 24 * 1024 * 1024;

/**
 * A small sync keeps V8's default growth: the extra collections cost a no-op pull at 10,000 files
 * 12% of its time (docs/performance.md#workspace-sync). The switch comes with the first collection
 * that leaves a large heap, before the default factor has let it grow far.
 */
function limitHeapGrowthWhenLarge(): void {
  const observer = new PerformanceObserver(() => {
    // V8's own figure: process.memoryUsage() reads /proc for the RSS too, at every collection
    // (30 ms of a pull of 10,000 files of 10 KiB in a CPU profile).
    if (getHeapStatistics().used_heap_size < LARGE_HEAP) return;
    setFlagsFromString(HEAP_GROWTH);
    observer.disconnect();
  });
  observer.observe({ entryTypes: ['gc'] });
}

/**
 * V8's young generation starts at 1 MiB and grows up to 16 MiB per semi-space (48 MiB in all) when
 * much survives a scavenge; a sync's pieces of JSON, socket chunks and hashes of thousands of files
 * make it grow, and the garbage it then holds before each scavenge is part of every phase's peak.
 * Never grown, it held 40 MB less of a pull into an empty folder at 10,000 files (120 to 79 MB)
 * and 20 MB less of a first push, for no more CPU (docs/performance.md#workspace-sync). Set before
 * the sync allocates: V8 reads it when it next considers growing.
 */
const YOUNG_GROWTH = '--semi-space-growth-factor=1';

/** `storeOnly`: a command of the store alone, which `--workspace NAME` by itself may name. */
export async function syncSetup(
  ctx: CliContext,
  flags: SyncFlags,
  options: { storeOnly?: boolean } = {},
): Promise<{ target: SyncTarget; deps: SyncDeps; config: Config }> {
  setFlagsFromString(YOUNG_GROWTH);
  limitHeapGrowthWhenLarge();
  const target = resolveTarget(flags, ctx.cwd, ctx.home, options);
  const config = await ctx.config(target.task ? readTask(target.task.dir).repo_root : undefined);
  const store = await openStore(config, ctx.home);
  return {
    target,
    config,
    deps: { store, config, warn: (t) => ctx.out.warn(t), ...(ctx.out.json ? {} : { progress: terminalProgress() }) },
  };
}

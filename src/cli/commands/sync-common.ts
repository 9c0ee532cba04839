// What the four `atlas sync` commands share: the target from --task/--dir, the configuration of
// its repository, the store, and a progress line on a terminal.
import type { Config } from '../../config/schema.js';
import { readTask } from '../../store/task-store.js';
import { terminalProgress } from '../../sync/progress.js';
import { openStore } from '../../sync/store.js';
import type { SyncDeps, SyncTarget, TargetFlags } from '../../sync/target.js';
import { resolveTarget } from '../../sync/target.js';
import type { CliContext } from '../context.js';

export type SyncFlags = TargetFlags;

export async function syncSetup(ctx: CliContext, flags: SyncFlags): Promise<{ target: SyncTarget; deps: SyncDeps; config: Config }> {
  const target = resolveTarget(flags, ctx.cwd, ctx.home);
  const config = await ctx.config(target.task ? readTask(target.task.dir).repo_root : undefined);
  const store = await openStore(config, ctx.home);
  return {
    target,
    config,
    deps: { store, config, warn: (t) => ctx.out.warn(t), ...(ctx.out.json ? {} : { progress: terminalProgress() }) },
  };
}

// atlas sync prune [--task ID | --dir PATH | --workspace NAME] [--keep N] [--dry-run]: removes old
// stored versions, keeping the newest N complete ones (docs/sync.md#retention).
import { AtlasError, EXIT } from '../../domain/errors.js';
import { syncPrune } from '../../sync/versions/prune.js';
import { renderPrune } from '../../sync/versions/render-prune.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncPruneCommand(ctx: CliContext, flags: SyncFlags & { keep?: string; dryRun?: boolean }): Promise<number> {
  if (flags.keep !== undefined && !/^\d{1,9}$/.test(flags.keep.trim())) {
    throw new AtlasError(`--keep ${flags.keep}: expected a whole number of versions to keep (1 or more)`, { exitCode: EXIT.input });
  }
  const { target, deps } = await syncSetup(ctx, flags, { storeOnly: true });
  const result = await syncPrune(target, deps, {
    ...(flags.keep !== undefined ? { keep: Number(flags.keep) } : {}),
    ...(flags.dryRun ? { dryRun: true } : {}),
  });
  ctx.out.result(result, () => renderPrune(result));
  return EXIT.ok;
}

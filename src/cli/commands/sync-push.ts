// atlas sync push [--task ID | --dir PATH] [--force] [--strict]: store the folder as a new version
// (and the task's folder); behind the store, combined with its newer work (exit 6 on conflicting
// files); --strict: a file changing under the push fails it instead of keeping its previous entry.
import { EXIT } from '../../domain/errors.js';
import { syncPush } from '../../sync/operations.js';
import { renderStats } from '../../sync/report/render.js';
import { renderPrune } from '../../sync/versions/render-prune.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncPushCommand(ctx: CliContext, flags: SyncFlags & { force?: boolean; strict?: boolean }): Promise<number> {
  const { target, deps } = await syncSetup(ctx, flags);
  const result = await syncPush(target, deps, { force: flags.force === true, strict: flags.strict === true });
  ctx.out.result(result, () => {
    const lines = [renderStats(result.stats, result.location)];
    if (result.task) lines.push(`task ${result.task.id}: ${renderStats(result.task.stats, result.location).replace(/^push: /, '')}`);
    if (result.pruned) lines.push(`sync.keep_versions: ${renderPrune(result.pruned)}`);
    return lines.join('\n');
  });
  return EXIT.ok;
}

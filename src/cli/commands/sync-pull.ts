// atlas sync pull [--task ID | --dir PATH] [--version TS] [--force]
import { AtlasError, EXIT } from '../../domain/errors.js';
import { VERSION_PATTERN } from '../../domain/sync-plan.js';
import { syncPull } from '../../sync/operations.js';
import { renderStats } from '../../sync/report/render.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncPullCommand(
  ctx: CliContext,
  given: SyncFlags & { version?: string; storedVersion?: string; force?: boolean },
): Promise<number> {
  // main.ts hands `--version` after `sync` over as --stored-version (see there).
  const flags = { ...given, version: given.storedVersion ?? given.version };
  if (flags.version !== undefined && !VERSION_PATTERN.test(flags.version)) {
    throw new AtlasError(`--version ${flags.version}: a version is the unix time atlas sync versions lists`, { exitCode: EXIT.input });
  }
  const { target, deps } = await syncSetup(ctx, flags);
  const result = await syncPull(target, deps, {
    ...(flags.version !== undefined ? { version: flags.version } : {}),
    ...(flags.force ? { force: true } : {}),
  });
  ctx.out.result(result, () => renderStats(result.stats, result.location));
  return EXIT.ok;
}

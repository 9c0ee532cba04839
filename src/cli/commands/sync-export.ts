// atlas sync export [--task ID | --dir PATH | --workspace NAME] [--version TS] DEST: a stored
// version as an ordinary folder or S3 prefix (docs/sync.md#atlas-sync-export).
import { resolve } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { VERSION_PATTERN } from '../../domain/sync-plan.js';
import { formatBytes } from '../../sync/report/render.js';
import { syncExport } from '../../sync/transfer/export.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncExportCommand(
  ctx: CliContext,
  dest: string,
  given: SyncFlags & { version?: string; storedVersion?: string },
): Promise<number> {
  const version = given.storedVersion ?? given.version;
  if (version !== undefined && !VERSION_PATTERN.test(version)) {
    throw new AtlasError(`--version ${version}: a version is the unix time atlas sync versions lists`, { exitCode: EXIT.input });
  }
  const { target, deps } = await syncSetup(ctx, given, { storeOnly: true });
  const where = dest.startsWith('s3://') ? dest : resolve(ctx.cwd, dest);
  const result = await syncExport(target, deps, { dest: where, ...(version !== undefined ? { version } : {}) });
  ctx.out.result(result, () =>
    [
      `exported version ${result.version} of ${result.workspace} (${result.location}) to ${result.dest}`,
      `  ${result.files} file(s), ${result.links} link(s), ${formatBytes(result.bytes)}`,
      ...(result.skipped_links.length > 0
        ? [
            `  note: ${result.skipped_links.length} link(s) not written (${where.startsWith('s3://') ? 'S3 holds no links' : 'pointing outside the folder'}): ${result.skipped_links.slice(0, 5).join(', ')}`,
          ]
        : []),
    ].join('\n'),
  );
  return EXIT.ok;
}

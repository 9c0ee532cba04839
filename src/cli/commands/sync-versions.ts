// atlas sync versions [--task ID | --dir PATH | --workspace NAME]: the stored versions of the
// workspace, oldest first.
import { EXIT } from '../../domain/errors.js';
import { syncVersions } from '../../sync/operations.js';
import { formatBytes } from '../../sync/report/render.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncVersionsCommand(ctx: CliContext, flags: SyncFlags): Promise<number> {
  const { target, deps } = await syncSetup(ctx, flags, { storeOnly: true });
  const result = await syncVersions(target, deps);
  ctx.out.result(result, () => {
    if (result.versions.length === 0) return `${result.location} has no version of ${result.workspace}`;
    return [
      `${result.workspace} in ${result.location}:`,
      ...result.versions.map(
        (v) =>
          `  ${v.version}  ${v.created_at}  ${v.status === 'complete' ? `${v.files} files, ${formatBytes(v.bytes)}${v.parent !== undefined ? `, on ${v.parent}` : ''}` : `${v.status}: ${v.problem}`}`,
      ),
    ].join('\n');
  });
  return EXIT.ok;
}

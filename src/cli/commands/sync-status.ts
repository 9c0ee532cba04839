// atlas sync status [--task ID | --dir PATH]: what push and pull would do; changes nothing.
import { EXIT } from '../../domain/errors.js';
import { syncStatus } from '../../sync/operations.js';
import { formatBytes, someOf } from '../../sync/report/render.js';
import type { CliContext } from '../context.js';
import type { SyncFlags } from './sync-common.js';
import { syncSetup } from './sync-common.js';

export default async function syncStatusCommand(ctx: CliContext, flags: SyncFlags): Promise<number> {
  const { target, deps } = await syncSetup(ctx, flags);
  const s = await syncStatus(target, deps);
  ctx.out.result(s, () => {
    const synced = s.last_synced_at === null ? 'never (or an unfinished pull)' : new Date(s.last_synced_at * 1000).toISOString();
    const push = s.push.new_version
      ? `would make a new version: upload ${s.push.upload} file(s) (${formatBytes(s.push.upload_bytes)}), reuse ${s.push.reuse}, drop ${s.push.removed}`
      : 'nothing to push';
    const pull =
      s.pull.skipped_because ??
      `download ${s.pull.download} file(s) (${formatBytes(s.pull.download_bytes)}), delete ${s.pull.delete}, skip ${s.pull.skip}, keep ${s.pull.keep}`;
    const lines = [
      `${s.workspace}: ${s.root}`,
      `  store        ${s.location} (latest version ${s.latest_version ?? 'none'})`,
      `  last sync    ${synced}`,
      `  push         ${push}`,
      `  pull         ${pull}`,
    ];
    if (s.pull.conflicts.length > 0)
      lines.push(
        `  conflicts    ${s.pull.conflicts.length} file(s) changed here that a pull would overwrite (--force): ${s.pull.conflicts.slice(0, 5).join(', ')}`,
      );
    for (const r of s.pull.refused.slice(0, 10)) lines.push(`  refused      ${r}`);
    if (s.push.unreadable.length > 0)
      lines.push(
        `  unreadable   ${s.push.unreadable.length} file(s) or folder(s) a push cannot read, and refuses: ${someOf(s.push.unreadable)}`,
      );
    return lines.join('\n');
  });
  return EXIT.ok;
}

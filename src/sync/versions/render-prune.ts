// A prune's result as text for people (`atlas sync prune`, and a push with sync.keep_versions).
import { formatBytes } from '../report/render.js';
import type { PruneResult } from './prune.js';

export function renderPrune(result: PruneResult): string {
  const verb = result.dry_run ? 'would remove' : 'removed';
  const total = result.removed;
  const lines = [
    `${result.dry_run ? 'dry run: ' : ''}${verb} ${total.versions} version(s), ${total.objects} file(s), ${formatBytes(total.bytes)} (${result.location}; keeping the newest ${result.keep})`,
  ];
  if (total.blobs > 0) lines.push(`  and ${total.blobs} content(s) no kept version uses, ${formatBytes(total.blob_bytes)}`);
  for (const tree of result.trees) {
    const kept =
      tree.kept.length === 0
        ? 'everything (no complete version)'
        : tree.kept.length === 1
          ? tree.kept[0]
          : `${tree.kept.length} versions, ${tree.kept[0]} to ${tree.kept.at(-1)}`;
    lines.push(`  ${tree.tree}: kept ${kept}`);
    for (const r of tree.removed)
      lines.push(`    ${verb} ${r.version}  ${r.objects} file(s), ${formatBytes(r.bytes)}${r.incomplete ? ' (incomplete)' : ''}`);
    for (const s of tree.spared) lines.push(`    spared ${s.version}  ${s.reason}`);
    if (tree.blobs.young > 0)
      lines.push(`    spared ${tree.blobs.young} unused content(s) younger than an hour: a push may be about to use them`);
    const packs = tree.blobs.packs;
    if (packs && packs.taken_apart > 0)
      lines.push(
        `    ${result.dry_run ? 'would take' : 'took'} apart ${packs.taken_apart} pack(s) mostly unused: ${packs.moved} content(s) still used ${result.dry_run ? 'would move' : 'moved'} into blobs of their own`,
      );
    if (packs && packs.unused_kept > 0)
      lines.push(
        `    ${formatBytes(packs.unused_kept)} no kept version uses stays inside packs still mostly used (a pack is taken apart once half of it is unused)`,
      );
    if (tree.blobs.skipped) lines.push(`    ${tree.blobs.skipped}`);
    if (tree.blobs.damaged) lines.push(`    ${tree.blobs.damaged}`);
  }
  return lines.join('\n');
}

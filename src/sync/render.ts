// SyncStats, prune results and version lists as text for people (the JSON is the data itself).
import { formatDuration } from '../domain/duration.js';
import type { SyncStats } from '../domain/sync-plan.js';
import type { PruneResult } from './prune.js';

/** Lines for a message, indented: the first 10, then how many more there are. */
export function listed(lines: readonly string[]): string {
  return [...lines.slice(0, 10).map((l) => `  ${l}`), ...(lines.length > 10 ? [`  ... and ${lines.length - 10} more`] : [])].join('\n');
}

/** The first few of `paths`, for a note. */
export function someOf(paths: readonly string[]): string {
  return `${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ', ...' : ''}`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export function renderStats(stats: SyncStats, location: string): string {
  const head =
    stats.version === null
      ? `${stats.direction}: nothing to do (${location})`
      : `${stats.direction === 'push' ? 'pushed version' : 'pulled version'} ${stats.version} (${location})`;
  const counts =
    stats.direction === 'push'
      ? `  uploaded ${stats.files_uploaded}, reused ${stats.files_reused} without sending, skipped ${stats.files_skipped}`
      : `  downloaded ${stats.files_downloaded}, deleted ${stats.files_deleted}, skipped ${stats.files_skipped}`;
  return [head, counts, `  ${formatBytes(stats.bytes_transferred)} transferred in ${formatDuration(stats.duration_ms)}`, ...stats.notes.map((n) => `  note: ${n}`)].join('\n');
}

export function renderPrune(result: PruneResult): string {
  const verb = result.dry_run ? 'would remove' : 'removed';
  const total = result.removed;
  const lines = [
    `${result.dry_run ? 'dry run: ' : ''}${verb} ${total.versions} version(s), ${total.objects} file(s), ${formatBytes(total.bytes)} (${result.location}; keeping the newest ${result.keep})`,
  ];
  if (total.blobs > 0) lines.push(`  and ${total.blobs} content(s) no kept version uses, ${formatBytes(total.blob_bytes)}`);
  for (const tree of result.trees) {
    const kept = tree.kept.length === 0 ? 'everything (no complete version)' : tree.kept.length === 1 ? tree.kept[0] : `${tree.kept.length} versions, ${tree.kept[0]} to ${tree.kept.at(-1)}`;
    lines.push(`  ${tree.tree}: kept ${kept}`);
    for (const r of tree.removed) lines.push(`    ${verb} ${r.version}  ${r.objects} file(s), ${formatBytes(r.bytes)}${r.incomplete ? ' (incomplete)' : ''}`);
    for (const s of tree.spared) lines.push(`    spared ${s.version}  ${s.reason}`);
    if (tree.blobs.young > 0) lines.push(`    spared ${tree.blobs.young} unused content(s) younger than an hour: a push may be about to use them`);
    const packs = tree.blobs.packs;
    if (packs && packs.taken_apart > 0) lines.push(`    ${result.dry_run ? 'would take' : 'took'} apart ${packs.taken_apart} pack(s) mostly unused: ${packs.moved} content(s) still used ${result.dry_run ? 'would move' : 'moved'} into blobs of their own`);
    if (packs && packs.unused_kept > 0) lines.push(`    ${formatBytes(packs.unused_kept)} no kept version uses stays inside packs still mostly used (a pack is taken apart once half of it is unused)`);
    if (tree.blobs.skipped) lines.push(`    ${tree.blobs.skipped}`);
    if (tree.blobs.damaged) lines.push(`    ${tree.blobs.damaged}`);
  }
  return lines.join('\n');
}

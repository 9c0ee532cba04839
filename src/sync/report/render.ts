// SyncStats, prune results and version lists as text for people (the JSON is the data itself).
import { formatDuration } from '../../domain/duration.js';
import type { SyncStats } from '../../domain/sync-plan.js';

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
  return [
    head,
    counts,
    `  ${formatBytes(stats.bytes_transferred)} transferred in ${formatDuration(stats.duration_ms)}`,
    ...stats.notes.map((n) => `  note: ${n}`),
  ].join('\n');
}

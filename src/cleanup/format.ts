// Text rendering of a cleanup report (the --json form is the report itself). Pure.
import type { CleanupReport } from './cleanup.js';

export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}

/** "45d", "36h", "12m": the coarse unit that reads best for an age or a retention. */
export function formatAge(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${Math.max(0, minutes)}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function formatCleanupReport(r: CleanupReport): string {
  const lines: string[] = [];
  const dry = r.dry_run;
  if (r.removed.length === 0) {
    lines.push('Nothing to clean up: no ended task is older than its retention (hooks.retention.*).');
  } else {
    const states = (['completed', 'failed', 'abandoned'] as const).filter((s) => r.by_state[s] > 0).map((s) => `${r.by_state[s]} ${s}`);
    lines.push(
      dry
        ? `Would remove ${plural(r.removed.length, 'task')} (${states.join(', ')}), freeing ${formatBytes(r.bytes_freed)}:`
        : `Removed ${plural(r.removed.length, 'task')} (${states.join(', ')}), freed ${formatBytes(r.bytes_freed)}:`,
    );
    const idWidth = Math.max(...r.removed.map((t) => t.task_id.length));
    for (const t of r.removed) {
      const age = `ended ${formatAge(t.age_ms)} ago (kept ${formatAge(t.retention_ms)})`;
      lines.push(`  ${t.task_id.padEnd(idWidth)}  ${t.state.padEnd(9)}  ${age.padEnd(24)}  ${formatBytes(t.bytes).padStart(8)}  ${t.workspace}`);
      const wt = t.worktree;
      if (wt?.action === 'removed') lines.push(`      worktree ${dry ? 'would be removed' : 'removed'}: ${wt.path} (${formatBytes(wt.bytes)}; the branch and its commits stay)`);
      else if (wt?.action === 'kept') lines.push(`      worktree ${dry ? 'would be kept' : 'kept'}: ${wt.path}: ${wt.reason}`);
      else if (wt?.action === 'missing') lines.push(`      worktree already gone: ${wt.path}`);
    }
  }
  if (r.worktrees_kept.length > 0) {
    lines.push(
      `${plural(r.worktrees_kept.length, 'worktree')} ${dry ? 'would be' : 'were'} kept; save or discard the work there, then run \`git worktree remove <path>\` yourself.`,
    );
  }
  if (r.workspaces_removed.length > 0) {
    lines.push(`${dry ? 'Workspaces that would be removed' : 'Workspaces removed'} (no task left): ${r.workspaces_removed.join(', ')}`);
  }
  if (r.skipped.length > 0) {
    lines.push(`Left alone, ${plural(r.skipped.length, 'task')} that cannot be judged safely:`);
    for (const s of r.skipped) lines.push(`  ${s.task_id} (${s.workspace}): ${s.reason}`);
    lines.push('  Fix or remove these folders by hand if you no longer need them.');
  }
  const kept = r.kept.active + r.kept.within_retention;
  if (kept > 0) {
    const parts = [
      r.kept.active > 0 ? `${r.kept.active} in progress` : '',
      r.kept.within_retention > 0 ? `${r.kept.within_retention} within ${r.kept.within_retention === 1 ? 'its' : 'their'} retention` : '',
    ].filter(Boolean);
    lines.push(`Kept ${plural(kept, 'task')}: ${parts.join(', ')}.`);
  }
  if (dry && r.removed.length > 0) lines.push('Nothing was changed (dry run). Run `atlas cleanup` to remove them.');
  return lines.join('\n');
}

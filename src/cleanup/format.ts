// Text rendering of a cleanup report (the --json form is the report itself). Pure.
import { formatAge } from './age.js';
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
function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function sum(items: readonly { bytes: number }[]): number {
  return items.reduce((total, item) => total + item.bytes, 0);
}

export function formatCleanupReport(r: CleanupReport): string {
  const lines: string[] = [];
  const dry = r.dry_run;
  const debrisBytes = sum(r.half_created_removed) + sum(r.temp_files_removed);
  const debris = r.half_created_removed.length + r.temp_files_removed.length;
  const changes = r.removed.length + debris + r.workspaces_removed.length;
  if (r.removed.length === 0) {
    lines.push(`${changes === 0 ? 'Nothing to clean up: no' : 'No'} ended task is older than its retention (hooks.retention.*).`);
  } else {
    const states = (['completed', 'failed', 'abandoned'] as const).filter((s) => r.by_state[s] > 0).map((s) => `${r.by_state[s]} ${s}`);
    const bytes = formatBytes(r.bytes_freed - debrisBytes);
    lines.push(
      dry
        ? `Would remove ${plural(r.removed.length, 'task')} (${states.join(', ')}), freeing ${bytes}:`
        : `Removed ${plural(r.removed.length, 'task')} (${states.join(', ')}), freed ${bytes}:`,
    );
    const idWidth = Math.max(...r.removed.map((t) => t.task_id.length));
    for (const t of r.removed) {
      const age = `ended ${formatAge(t.age_ms)} ago (kept ${formatAge(t.retention_ms)})`;
      lines.push(
        `  ${t.task_id.padEnd(idWidth)}  ${t.state.padEnd(9)}  ${age.padEnd(24)}  ${formatBytes(t.bytes).padStart(8)}  ${t.workspace}`,
      );
      const wt = t.worktree;
      if (wt?.action === 'removed') {
        lines.push(
          `      worktree ${dry ? 'would be removed' : 'removed'}: ${wt.path} (${formatBytes(wt.bytes)}; the branch and its commits stay)`,
        );
        if (wt.ignored.length > 0)
          lines.push(`      ignored files ${dry ? 'that would be deleted' : 'deleted'} with it: ${wt.ignored.join(', ')}`);
      } else if (wt?.action === 'kept') lines.push(`      worktree ${dry ? 'would be kept' : 'kept'}: ${wt.path}: ${wt.reason}`);
      else if (wt?.action === 'missing') lines.push(`      worktree already gone: ${wt.path}`);
    }
  }
  if (r.worktrees_kept.length > 0) {
    lines.push(
      `${plural(r.worktrees_kept.length, 'worktree')} ${dry ? 'would be' : 'were'} kept; save or discard the work there, then run \`git worktree remove <path>\` yourself.`,
    );
  }
  lines.push(...formatDebris(r));
  for (const l of r.sandbox_litter_removed)
    lines.push(`Sandbox litter of ${l.task_id} ${dry ? 'that would be removed' : 'removed'}: ${l.removed}`);
  const bridges = r.server_bridges_removed;
  if (bridges.processes.length + bridges.sockets.length > 0)
    lines.push(
      `Sandbox bridges of a killed server ${dry ? 'that would be stopped' : 'stopped'}: ${bridges.processes.length} socat process(es), ${bridges.sockets.length} socket(s)`,
    );
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
  if (r.removed.length > 0 && debris > 0) lines.push(`In all, ${dry ? 'would free' : 'freed'} ${formatBytes(r.bytes_freed)}.`);
  if (dry && changes > 0) lines.push('Nothing was changed (dry run). Run `atlas cleanup` to remove them.');
  return lines.join('\n');
}

/** What killed atlas processes left: unfinished task folders and temp files of interrupted writes. */
function formatDebris(r: CleanupReport): string[] {
  const lines: string[] = [];
  const dry = r.dry_run;
  const head = (n: number, what: string, which: string, bytes: number) =>
    `${dry ? 'Would remove' : 'Removed'} ${plural(n, what)} ${which}, ${dry ? 'freeing' : 'freed'} ${formatBytes(bytes)}:`;
  const halves = r.half_created_removed;
  if (halves.length > 0) {
    lines.push(head(halves.length, 'task folder', '`atlas start` left unfinished (no task.json; nothing ran)', sum(halves)));
    const idWidth = Math.max(...halves.map((h) => h.task_id.length));
    for (const h of halves) {
      lines.push(
        `  ${h.task_id.padEnd(idWidth)}  ${`unchanged for ${formatAge(h.age_ms)}`.padEnd(18)}  ${formatBytes(h.bytes).padStart(8)}  ${h.workspace}`,
      );
    }
  }
  const temps = r.temp_files_removed;
  if (temps.length > 0) {
    lines.push(head(temps.length, 'temp file', 'of interrupted writes', sum(temps)));
    for (const t of temps) lines.push(`  ${t.path}  (process ${t.pid}, ${formatAge(t.age_ms)} old, ${formatBytes(t.bytes)})`);
  }
  const kept = r.half_created_kept;
  if (kept.length > 0) {
    lines.push(`Kept ${plural(kept.length, 'task folder')} that \`atlas start\` left unfinished:`);
    for (const k of kept) lines.push(`  ${k.dir}: ${k.reason}`);
  }
  return lines;
}

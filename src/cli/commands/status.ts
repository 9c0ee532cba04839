// atlas status [--all]: tasks newest first.
import { formatDuration } from '../../domain/duration.js';
import { EXIT } from '../../domain/errors.js';
import type { TaskSummary } from '../../engine/task-list.js';
import { listTasks } from '../../engine/task-list.js';
import type { CliContext } from '../context.js';

function ago(ts: string, now: number): string {
  const ms = now - Date.parse(ts);
  return Number.isFinite(ms) ? `${formatDuration(Math.max(0, ms))} ago` : '?';
}

function stateText(t: TaskSummary): string {
  return t.activity === 'crashed' || t.activity === 'not_responding' ? `${t.state}!` : t.state;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
}

export default async function status(ctx: CliContext, opts: { all?: boolean }): Promise<number> {
  const listing = listTasks(ctx.home, { all: Boolean(opts.all) });
  const now = Date.now();
  ctx.out.result({ tasks: listing.tasks, hidden_ended: listing.hidden, unreadable: listing.unreadable }, () => {
    if (listing.tasks.length === 0 && listing.unreadable.length === 0) {
      return listing.hidden > 0
        ? `no active tasks (${listing.hidden} ended; atlas status --all lists them)`
        : 'no tasks yet: start one with atlas start <template> "what to do"';
    }
    const rows = [['TASK', 'STATE', 'TEMPLATE', 'STEP', 'MODE', 'UPDATED', 'DESCRIPTION']];
    for (const t of listing.tasks) {
      const step = t.steps === 0 ? '-' : `${t.step}/${t.steps}${t.step_name && t.activity !== 'ended' ? ` ${t.step_name}` : ''}`;
      const description = t.description.length > 60 ? `${t.description.slice(0, 59)}…` : t.description;
      rows.push([t.id, stateText(t), t.template, step, t.mode ?? '-', ago(t.updated_at, now), description]);
    }
    const lines = table(rows);
    const crashed = listing.tasks.filter((t) => t.activity === 'crashed');
    const paused = listing.tasks.filter((t) => t.activity === 'paused');
    const waiting = listing.tasks.filter((t) => t.activity === 'waiting');
    const hung = listing.tasks.filter((t) => t.activity === 'not_responding');
    if (crashed.length + paused.length + waiting.length + hung.length > 0) lines.push('');
    for (const t of crashed)
      lines.push(`! ${t.id} crashed (${t.crash_type}: ${t.note ?? 'no live process'}): atlas recover --task ${t.id}`);
    for (const t of hung) {
      lines.push(
        `! ${t.id} not responding (pid ${t.pid}; ${t.note}): stop it (kill ${t.pid}, or kill -9 ${t.pid} if it stays), then atlas recover --task ${t.id}`,
      );
    }
    for (const t of paused) lines.push(`  ${t.id} ${t.note ?? 'was interrupted'}: atlas recover --task ${t.id}`);
    for (const t of waiting) lines.push(`  ${t.id} waits for you: atlas resume --task ${t.id}`);
    for (const u of listing.unreadable) lines.push(`? ${u.id}: ${u.error}`);
    if (listing.hidden > 0)
      lines.push(`(${listing.hidden} older ended task${listing.hidden === 1 ? '' : 's'} not shown: atlas status --all)`);
    return lines.join('\n');
  });
  return EXIT.ok;
}

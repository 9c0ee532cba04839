// `atlas usage`: the ledger of every conversation of every task (or one task), grouped. Each
// conversation is one row, read once from its conversation.json: a resumed run is its own row, so
// nothing is counted twice, and a row that died before its result stays partial.

import type { Warn } from '../conversation/read.js';
import { listConversations } from '../conversation/read.js';
import type { UsageFigures, UsageTotals } from '../conversation/totals.js';
import { addFigures, emptyTotals, figuresOf } from '../conversation/totals.js';
import type { ConversationRecord } from '../domain/conversation.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { toTimestamp } from '../domain/time.js';
import { listTaskRefs, tryReadTask } from '../store/task-store.js';

export const USAGE_GROUPS = ['task', 'step', 'template', 'day', 'model'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageRow {
  key: string;
  totals: UsageTotals;
}

export interface UsageReport {
  by: UsageGroup;
  since: string | null;
  task: string | null;
  rows: UsageRow[];
  total: UsageTotals;
}

export interface UsageOptions {
  home: string;
  by: UsageGroup;
  taskId?: string | undefined;
  /** Only conversations that started at or after this time (ms since the epoch). */
  sinceMs?: number | undefined;
  warn: Warn;
}

/** --since: a date (2026-01-31, UTC midnight) or an RFC 3339 time. */
export function parseSince(text: string): number {
  const trimmed = text.trim();
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(trimmed)
    ? Date.parse(`${trimmed}T00:00:00Z`)
    : /^\d{4}-\d{2}-\d{2}T/.test(trimmed)
      ? Date.parse(trimmed)
      : NaN;
  if (!Number.isFinite(ms)) {
    throw new AtlasError(`--since expects a date like 2026-01-31 or a time like 2026-01-31T12:00:00Z, got "${text}"`, {
      exitCode: EXIT.input,
      hint: 'dates are UTC',
    });
  }
  return ms;
}

function modelName(model: string): string {
  return model.trim() === '' ? '(unknown)' : model;
}

/** The rows one conversation contributes: one, or one per model when the agent reported them. */
function contributions(c: ConversationRecord, by: UsageGroup, template: string): { key: string; figures: UsageFigures; first: boolean }[] {
  if (by === 'model') {
    if (c.stats.models.length === 0) return [{ key: modelName(c.model), figures: figuresOf(c.stats), first: true }];
    return c.stats.models.map((m, i) => ({
      key: modelName(m.model),
      figures: {
        input_tokens: m.input_tokens,
        cache_read_tokens: m.cache_read_tokens,
        cache_creation_tokens: m.cache_creation_tokens,
        output_tokens: m.output_tokens,
        cost_usd: m.cost_usd,
        partial: c.stats.partial,
      },
      first: i === 0,
    }));
  }
  const key = by === 'task' ? c.task_id : by === 'step' ? c.step_name : by === 'template' ? template : c.started_at.slice(0, 10);
  return [{ key, figures: figuresOf(c.stats), first: true }];
}

export function collectUsage(options: UsageOptions): UsageReport {
  const refs = listTaskRefs(options.home).filter((r) => options.taskId === undefined || r.id === options.taskId);
  if (options.taskId !== undefined && refs.length === 0) {
    throw new AtlasError(`no task ${options.taskId} under ${options.home}`, {
      exitCode: EXIT.notFound,
      hint: 'atlas status --all lists the tasks',
    });
  }
  const groups = new Map<string, UsageTotals>();
  let total = emptyTotals();
  for (const ref of refs) {
    const template = tryReadTask(ref.dir)?.template ?? '(unknown)';
    for (const c of listConversations(ref.dir, options.warn)) {
      if (options.sinceMs !== undefined && !(Date.parse(c.started_at) >= options.sinceMs)) continue;
      total = addFigures(total, figuresOf(c.stats));
      for (const part of contributions(c, options.by, template)) {
        groups.set(part.key, addFigures(groups.get(part.key) ?? emptyTotals(), part.figures, part.first));
      }
    }
  }
  const rows = [...groups.entries()].map(([key, totals]) => ({ key, totals })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    by: options.by,
    since: options.sinceMs !== undefined ? toTimestamp(new Date(options.sinceMs)) : null,
    task: options.taskId ?? null,
    rows,
    total,
  };
}

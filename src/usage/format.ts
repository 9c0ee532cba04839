// `atlas usage` as a table for people and as JSON for scripts.
import type { UsageTotals } from '../conversation/totals.js';
import { costText, formatTokens, outputText, totalsJson } from '../conversation/totals.js';
import type { UsageReport } from './collect.js';

function cells(key: string, t: UsageTotals): string[] {
  return [
    key,
    String(t.conversations),
    t.partial > 0 ? `${t.partial} partial${t.lost_in_flight > 0 ? `, ${t.lost_in_flight} in flight` : ''}` : '',
    formatTokens(t.input_tokens),
    formatTokens(t.cache_read_tokens),
    formatTokens(t.cache_creation_tokens),
    outputText(t),
    costText(t),
  ];
}

const RIGHT = [false, true, false, true, true, true, true, true];

export function formatUsageTable(report: UsageReport): string {
  if (report.total.conversations === 0) {
    return `no agent conversations${report.task ? ` in task ${report.task}` : ''}${report.since ? ` since ${report.since}` : ''}`;
  }
  const header = [report.by.toUpperCase(), 'RUNS', '', 'INPUT', 'CACHE READ', 'CACHE WRITE', 'OUTPUT', 'COST'];
  const body = report.rows.map((r) => cells(r.key, r.totals));
  const footer = cells('TOTAL', report.total);
  const all = [header, ...body, footer];
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((c, i) => (RIGHT[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const lines = [line(header), ...body.map(line), line(footer)];
  const notes: string[] = [];
  if (report.total.partial > 0) {
    notes.push(
      'partial: a run cut off before the agent reported its totals; its tokens come from its messages, and for Claude Code from its transcript (each message once); its cost is unknown.',
    );
  }
  if (report.total.lost_in_flight > 0) {
    notes.push(
      'in flight: a run stopped while it waited for an answer from the model API; an answer the API sent then is billed but counted nowhere (lost in flight).',
    );
  }
  if (report.total.output_unknown > 0 || report.total.cost_unknown > 0) {
    notes.push('?: unknown (never counted as 0); ≥: a total that includes unknown figures.');
  }
  return [...lines, ...(notes.length > 0 ? ['', ...notes] : [])].join('\n');
}

export function usageJson(report: UsageReport) {
  return {
    by: report.by,
    since: report.since,
    task: report.task,
    rows: report.rows.map((r) => ({ [report.by]: r.key, ...totalsJson(r.totals) })),
    total: totalsJson(report.total),
  };
}

// GET /usage: tokens and cost of what an account may see, per day, per template and per account.
// Its tasks' agent runs (each run's ledger, on the day it started, under its task's template) and
// its conversations over the API (each turn's run, on the day it started, under "(conversations)").
// A token sees one account: per account is that account's row.

import type { UsageTotals } from '../../conversation/totals.js';
import { addFigures, emptyTotals, figuresOf, totalsJson } from '../../conversation/totals.js';
import type { ConversationStats } from '../../domain/conversation.js';

export const CONVERSATIONS_KEY = '(conversations)';

/** One source of usage: a task's run or an API conversation. */
export interface UsageItem {
  account: string;
  day: string;
  template: string;
  stats: ConversationStats;
}

export type UsageRowJson = { key: string } & ReturnType<typeof totalsJson>;

export interface UsageReportJson {
  accounts: string[];
  total: ReturnType<typeof totalsJson>;
  by_day: UsageRowJson[];
  by_template: UsageRowJson[];
  by_account: UsageRowJson[];
}

function rows(items: UsageItem[], key: (i: UsageItem) => string): UsageRowJson[] {
  const groups = new Map<string, UsageTotals>();
  for (const i of items) groups.set(key(i), addFigures(groups.get(key(i)) ?? emptyTotals(), figuresOf(i.stats)));
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, t]) => ({ key: k, ...totalsJson(t) }));
}

export function usageReport(accounts: string[], items: UsageItem[]): UsageReportJson {
  const total = items.reduce((t, i) => addFigures(t, figuresOf(i.stats)), emptyTotals());
  return {
    accounts,
    total: totalsJson(total),
    by_day: rows(items, (i) => i.day),
    by_template: rows(items, (i) => i.template),
    by_account: rows(items, (i) => i.account),
  };
}

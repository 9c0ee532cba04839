// Sums of conversation stats that never pretend: output tokens and cost a run could not report
// (null: it was cut off before its result) are counted as unknown, not as 0, and a total that
// includes unknowns is shown as a lower bound ("≥"), or "?" when nothing is known.
import type { ConversationStats } from '../domain/conversation.js';
import { groupThousands } from '../domain/text-order.js';

export interface UsageTotals {
  /** Figures added (conversations, or per-model rows of them). */
  rows: number;
  conversations: number;
  /** Rows whose totals are not the agent's own final figures. */
  partial: number;
  /** Cut-off runs that were waiting for an API answer when stopped (ConversationStats.lost_in_flight). */
  lost_in_flight: number;
  input_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  /** Sum of the known output tokens. */
  output_tokens: number;
  /** Rows whose output tokens are unknown. */
  output_unknown: number;
  cost_usd: number;
  cost_unknown: number;
}

export function emptyTotals(): UsageTotals {
  return {
    rows: 0,
    conversations: 0,
    partial: 0,
    lost_in_flight: 0,
    input_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    output_tokens: 0,
    output_unknown: 0,
    cost_usd: 0,
    cost_unknown: 0,
  };
}

/** One row's figures (a conversation, or one model of it). */
export interface UsageFigures {
  input_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  output_tokens: number | null;
  cost_usd: number | null;
  partial: boolean;
  lost_in_flight?: boolean;
}

export function figuresOf(stats: ConversationStats): UsageFigures {
  return {
    input_tokens: stats.total_input_tokens,
    cache_read_tokens: stats.cache_read_tokens,
    cache_creation_tokens: stats.cache_creation_tokens,
    output_tokens: stats.total_output_tokens,
    cost_usd: stats.cost_usd,
    partial: stats.partial,
    ...(stats.lost_in_flight ? { lost_in_flight: true } : {}),
  };
}

/** Adds a row; `conversations` counts it unless it is one more model of an already counted run. */
export function addFigures(totals: UsageTotals, f: UsageFigures, countsAsConversation = true): UsageTotals {
  return {
    rows: totals.rows + 1,
    conversations: totals.conversations + (countsAsConversation ? 1 : 0),
    partial: totals.partial + (f.partial && countsAsConversation ? 1 : 0),
    lost_in_flight: totals.lost_in_flight + (f.lost_in_flight && countsAsConversation ? 1 : 0),
    input_tokens: totals.input_tokens + f.input_tokens,
    cache_read_tokens: totals.cache_read_tokens + f.cache_read_tokens,
    cache_creation_tokens: totals.cache_creation_tokens + f.cache_creation_tokens,
    output_tokens: totals.output_tokens + (f.output_tokens ?? 0),
    output_unknown: totals.output_unknown + (f.output_tokens === null ? 1 : 0),
    cost_usd: totals.cost_usd + (f.cost_usd ?? 0),
    cost_unknown: totals.cost_unknown + (f.cost_usd === null ? 1 : 0),
  };
}

export function totalsOf(stats: ConversationStats[]): UsageTotals {
  return stats.reduce((t, s) => addFigures(t, figuresOf(s)), emptyTotals());
}

/** rows counted, rows unknown → "?" (all unknown), "≥n" (some), "n" (all known). */
function bounded(text: string, unknown: number, rows: number): string {
  if (unknown === 0) return text;
  return unknown >= rows ? '?' : `≥${text}`;
}

export function formatTokens(n: number): string {
  return groupThousands(n);
}

export function formatCost(usd: number): string {
  return usd === 0 ? '$0' : usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function outputText(t: UsageTotals): string {
  return bounded(formatTokens(t.output_tokens), t.output_unknown, t.rows);
}

export function costText(t: UsageTotals): string {
  return bounded(formatCost(t.cost_usd), t.cost_unknown, t.rows);
}

/** In JSON: the known sum, or null when every row is unknown; `*_complete` says whether it is exact. */
export function totalsJson(t: UsageTotals) {
  return {
    conversations: t.conversations,
    partial: t.partial,
    lost_in_flight: t.lost_in_flight,
    input_tokens: t.input_tokens,
    cache_read_tokens: t.cache_read_tokens,
    cache_creation_tokens: t.cache_creation_tokens,
    output_tokens: t.output_unknown >= t.rows && t.rows > 0 ? null : t.output_tokens,
    output_tokens_complete: t.output_unknown === 0,
    cost_usd: t.cost_unknown >= t.rows && t.rows > 0 ? null : Number(t.cost_usd.toFixed(6)),
    cost_complete: t.cost_unknown === 0,
  };
}

/** One line for people: "12,345 in (+6,789 cache) / ≥1,234 out · ≥$0.42 · 3 runs, 1 partial". */
export function totalsLine(t: UsageTotals): string {
  const cache = t.cache_read_tokens + t.cache_creation_tokens;
  const lost = t.lost_in_flight > 0 ? ` (${t.lost_in_flight} stopped waiting for an API answer: one sent then is lost in flight)` : '';
  const runs = `${t.conversations} run${t.conversations === 1 ? '' : 's'}${t.partial > 0 ? `, ${t.partial} partial${lost}` : ''}`;
  return `${formatTokens(t.input_tokens)} in${cache > 0 ? ` (+${formatTokens(cache)} cache)` : ''} / ${outputText(t)} out · ${costText(t)} · ${runs}`;
}

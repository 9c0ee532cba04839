// Tokens and cost as people read them, from the API's totals (GET /tasks/{id}/conversations,
// GET /usage): a figure some runs could not report is a lower bound ("≥"), or "?" when none could.

export interface Totals {
  conversations: number;
  partial: number;
  input_tokens: number;
  cache_read_tokens?: number;
  cache_creation_tokens?: number;
  output_tokens: number | null;
  output_tokens_complete: boolean;
  cost_usd: number | null;
  cost_complete: boolean;
}

const n = (v: number) => v.toLocaleString('en-US');

export function tokensOf(t: Totals): number {
  return t.input_tokens + (t.output_tokens ?? 0);
}

export function usageText(t: Totals): string {
  const cache = (t.cache_read_tokens ?? 0) + (t.cache_creation_tokens ?? 0);
  const out = t.output_tokens === null ? '?' : `${t.output_tokens_complete ? '' : '≥'}${n(t.output_tokens)}`;
  const cost = t.cost_usd === null ? '$?' : `${t.cost_complete ? '' : '≥'}$${t.cost_usd.toFixed(4)}`;
  const runs = `${t.conversations} run${t.conversations === 1 ? '' : 's'}${t.partial > 0 ? `, ${t.partial} partial` : ''}`;
  return `${n(t.input_tokens)} in${cache > 0 ? ` (+${n(cache)} cache)` : ''} / ${out} out tokens · ${cost} · ${runs}`;
}

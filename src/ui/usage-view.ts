/// <reference lib="dom" />
// Usage: tokens and cost of the account's conversations per day, as bars drawn by the page (SVG,
// no chart library). A conversation counts on the day it was last active (the API gives totals
// per conversation, not per turn).
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';

interface Stats {
  total_input_tokens?: number;
  total_output_tokens?: number;
  cost_usd?: number;
}

export interface Day {
  day: string;
  tokens: number;
  cost: number;
  conversations: number;
}

export function usageByDay(conversations: { updated_at: string; stats?: Stats }[]): Day[] {
  const days = new Map<string, Day>();
  for (const c of conversations) {
    const day = c.updated_at.slice(0, 10);
    const d = days.get(day) ?? { day, tokens: 0, cost: 0, conversations: 0 };
    d.tokens += (c.stats?.total_input_tokens ?? 0) + (c.stats?.total_output_tokens ?? 0);
    d.cost += c.stats?.cost_usd ?? 0;
    d.conversations++;
    days.set(day, d);
  }
  return [...days.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
}

function Bars({ days, value, label }: { days: Day[]; value: (d: Day) => number; label: string }) {
  const max = Math.max(1e-9, ...days.map(value));
  const w = 36;
  const h = 120;
  return html`<figure>
    <figcaption>${label}</figcaption>
    <svg role="img" aria-label=${label} viewBox=${`0 0 ${Math.max(1, days.length) * w} ${h + 20}`} width="100%" height=${h + 20} preserveAspectRatio="xMinYMin meet">
      ${days.map((d, i) => {
        const bh = Math.round((value(d) / max) * h);
        return html`<g><rect class="bar" x=${i * w + 4} y=${h - bh} width=${w - 8} height=${bh}><title>${`${d.day}: ${value(d)}`}</title></rect><text class="axis" x=${i * w + w / 2} y=${h + 14} text-anchor="middle">${d.day.slice(5)}</text></g>`;
      })}
    </svg>
  </figure>`;
}

export function UsageView() {
  const [days, setDays] = useState<Day[] | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    api<{ conversations: { updated_at: string; stats?: Stats }[] }>('GET', '/conversations?limit=1000').then((p) => setDays(usageByDay(p.conversations)), (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<p class="error" role="alert">${error}</p>`;
  if (!days) return html`<p>Loading…</p>`;
  const total = days.reduce((s, d) => ({ tokens: s.tokens + d.tokens, cost: s.cost + d.cost }), { tokens: 0, cost: 0 });
  return html`<section aria-label="Usage">
    <h1>Usage</h1>
    <p class="meta" data-testid="usage-total">${total.tokens} tokens, $${total.cost.toFixed(4)} in ${days.reduce((s, d) => s + d.conversations, 0)} conversation(s), by the day each was last active</p>
    <${Bars} days=${days} value=${(d: Day) => d.tokens} label="Tokens per day" />
    <${Bars} days=${days} value=${(d: Day) => Math.round(d.cost * 10000) / 10000} label="Cost per day (USD)" />
  </section>`;
}

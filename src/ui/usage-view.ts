/// <reference lib="dom" />
// Usage: tokens and cost per day, per template and per account (GET /usage: the runs of the
// account's tasks and its conversations), as bars the page draws itself (SVG, no chart library).
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { usePage } from './page.js';
import type { Totals } from './usage-format.js';
import { tokensOf, usageText } from './usage-format.js';

export interface Row extends Totals {
  key: string;
}

interface Usage {
  accounts: string[];
  total: Totals;
  by_day: Row[];
  by_template: Row[];
  by_account: Row[];
}

/** Bar heights (0..height) for values, the largest full height; labels cut to fit under a bar. */
export function bars(
  rows: Row[],
  value: (r: Row) => number,
  height: number,
  labelChars: number,
): { key: string; label: string; value: number; h: number }[] {
  const max = Math.max(0, ...rows.map(value));
  return rows.map((r) => ({
    key: r.key,
    label: r.key.length > labelChars ? `${r.key.slice(0, labelChars - 1)}…` : r.key,
    value: value(r),
    h: max > 0 ? Math.round((value(r) / max) * height) : 0,
  }));
}

function Bars({
  rows,
  value,
  label,
  width = 36,
  short = (k: string) => k,
}: {
  rows: Row[];
  value: (r: Row) => number;
  label: string;
  width?: number;
  short?: (k: string) => string;
}) {
  const h = 120;
  const w = width;
  return html`<figure>
    <figcaption>${label}</figcaption>
    <svg role="img" aria-label=${label} viewBox=${`0 0 ${Math.max(1, rows.length) * w} ${h + 20}`} width="100%" height=${h + 20} preserveAspectRatio="xMinYMin meet">
      ${bars(
        rows.map((r) => ({ ...r, key: short(r.key) })),
        value,
        h,
        Math.floor(w / 6),
      ).map(
        (b, i) =>
          html`<g><rect class="bar" x=${i * w + 4} y=${h - b.h} width=${w - 8} height=${b.h}><title>${`${rows[i]!.key}: ${b.value}`}</title></rect><text class="axis" x=${i * w + w / 2} y=${h + 14} text-anchor="middle">${b.label}</text></g>`,
      )}
    </svg>
  </figure>`;
}

const cost = (r: Row) => Math.round((r.cost_usd ?? 0) * 10000) / 10000;

export function UsageView() {
  const [usage, setUsage] = useState<Usage | undefined>();
  const [error, setError] = useState('');
  usePage(usage || error ? 'Usage' : undefined);
  useEffect(() => {
    api<Usage>('GET', '/usage').then(setUsage, (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<h1>Usage</h1><p class="error" role="alert">${error}</p>`;
  if (!usage) return html`<h1>Usage</h1><p>Loading…</p>`;
  return html`<section aria-label="Usage">
    <h1>Usage</h1>
    <p class="meta" data-testid="usage-total">${usageText(usage.total)}: the agent runs of your tasks and the turns of your conversations, each on the day it started</p>
    <h2>Per day</h2>
    <${Bars} rows=${usage.by_day} value=${tokensOf} label="Tokens per day" short=${(k: string) => k.slice(5)} />
    <${Bars} rows=${usage.by_day} value=${cost} label="Cost per day (USD)" short=${(k: string) => k.slice(5)} />
    <h2>Per template</h2>
    <p class="meta">Conversations over the API have no template: they count as (conversations).</p>
    <${Bars} rows=${usage.by_template} value=${tokensOf} label="Tokens per template" width=${90} />
    <${Bars} rows=${usage.by_template} value=${cost} label="Cost per template (USD)" width=${90} />
    <h2>Per account</h2>
    <p class="meta" data-testid="usage-accounts">The accounts this sign-in may see: a token sees only its own account, so this is ${usage.accounts.join(', ')} alone.</p>
    <${Bars} rows=${usage.by_account} value=${tokensOf} label="Tokens per account" width=${90} />
    <${Bars} rows=${usage.by_account} value=${cost} label="Cost per account (USD)" width=${90} />
  </section>`;
}

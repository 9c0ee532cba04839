// HOOK.md drawn from markdown.ts's blocks: only these elements, and every string a text node.

import { stripAnsi } from './ansi.js';
import { html } from './html.js';
import type { Block, Inline } from './markdown.js';
import { parseMarkdown } from './markdown.js';

function spans(parts: Inline[]) {
  return parts.map((p) =>
    p.kind === 'code'
      ? html`<code>${p.text}</code>`
      : p.kind === 'strong'
        ? html`<strong>${p.text}</strong>`
        : p.kind === 'em'
          ? html`<em>${p.text}</em>`
          : p.text,
  );
}

function block(b: Block, i: number) {
  switch (b.kind) {
    case 'h': {
      // The page's own h1/h2 come first: HOOK.md's headings sit below them (h3..h6).
      const level = Math.min(6, b.level + 2);
      return level === 3
        ? html`<h3 key=${i}>${spans(b.inline)}</h3>`
        : level === 4
          ? html`<h4 key=${i}>${spans(b.inline)}</h4>`
          : level === 5
            ? html`<h5 key=${i}>${spans(b.inline)}</h5>`
            : html`<h6 key=${i}>${spans(b.inline)}</h6>`;
    }
    case 'p':
      return html`<p key=${i}>${spans(b.inline)}</p>`;
    case 'quote':
      return html`<blockquote key=${i}>${spans(b.inline)}</blockquote>`;
    case 'ul':
      return html`<ul key=${i}>${b.items.map((it) => html`<li>${spans(it)}</li>`)}</ul>`;
    case 'ol':
      return html`<ol key=${i}>${b.items.map((it) => html`<li>${spans(it)}</li>`)}</ol>`;
    case 'pre':
      // HOOK.md quotes output as the command printed it: its colour codes are dropped, not shown.
      return html`<pre key=${i} tabindex="0">${stripAnsi(b.text)}</pre>`;
    case 'table': {
      // HOOK.md's key/value tables have an empty header row ("| | |"): no header is drawn then.
      const head = b.head.some((c) => c.length > 0)
        ? html`<thead><tr>${b.head.map((c) => (c.length ? html`<th scope="col">${spans(c)}</th>` : html`<td></td>`))}</tr></thead>`
        : null;
      return html`<div key=${i} class="table-wrap" tabindex="0"><table>${head}<tbody>${b.rows.map((r) => html`<tr>${r.map((c) => html`<td>${spans(c)}</td>`)}</tr>`)}</tbody></table></div>`;
    }
    case 'hr':
      return html`<hr key=${i} />`;
  }
}

export function MarkdownView({ text, label }: { text: string; label: string }) {
  return html`<div class="markdown" data-testid="hook-md" role="region" aria-label=${label} tabindex="0">${parseMarkdown(text).map(block)}</div>`;
}

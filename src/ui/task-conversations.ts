/// <reference lib="dom" />
// A task's agent runs on its page: the ledger's totals (tokens and cost), each run with its step,
// model and figures, and on request its messages and tool calls, a page at a time, as text.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import type { Totals } from './usage-format.js';
import { usageText } from './usage-format.js';

interface Run {
  id: string;
  step_name: string;
  attempt: number;
  agent: string;
  model: string;
  status: string;
  started_at: string;
  stats: { total_input_tokens: number; total_output_tokens: number | null; cost_usd: number | null; partial: boolean };
}

interface ToolCall {
  name?: string;
  input?: unknown;
  output?: string;
  status?: string;
  error?: string;
}

interface Message {
  key: string;
  role: number;
  body: string;
  tool_calls?: ToolCall[];
}

const ROLE: Record<number, string> = { 1: 'you', 2: 'agent', 3: 'tool' };
const PAGE = 200;

/** A recorded message as lines of text: the body, then each tool call and its result. */
export function messageLines(m: Message): string[] {
  const lines = m.body ? [`${ROLE[m.role] ?? 'message'}: ${m.body}`] : [];
  for (const t of m.tool_calls ?? []) {
    lines.push(`tool ${String(t.name)}: ${JSON.stringify(t.input ?? {}).slice(0, 2000)}`);
    if (t.status && t.status !== 'pending') lines.push(`→ ${t.status}: ${String(t.output || t.error || '').slice(0, 2000)}`);
  }
  return lines;
}

function RunMessages({ path }: { path: string }) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState('');
  const more = (after?: string | null) =>
    api<{ messages: Message[]; next_cursor: string | null }>('GET', `${path}/messages?limit=${PAGE}${after ? `&cursor=${encodeURIComponent(after)}` : ''}`).then(
      (p) => (setMessages((m) => [...m, ...p.messages]), setCursor(p.next_cursor)),
      (e: Error) => setError(e.message),
    );
  useEffect(() => void more(), [path]);
  return html`<div>
    <ol class="messages run-messages" data-testid="run-messages" tabindex="0" aria-label="Messages and tool calls">${messages.flatMap((m) => messageLines(m).map((l, i) => html`<li key=${`${m.key}-${i}`} class=${l.startsWith('tool ') || l.startsWith('→ ') ? 'tool' : `role-${m.role}`}><pre>${l}</pre></li>`))}</ol>
    ${cursor ? html`<button type="button" onClick=${() => void more(cursor)}>Show more messages</button>` : null}
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </div>`;
}

export function TaskConversations({ path, version }: { path: string; version: string }) {
  const [data, setData] = useState<{ conversations: Run[]; total: Totals } | undefined>();
  const [open, setOpen] = useState<string | undefined>();
  useEffect(() => {
    api<{ conversations: Run[]; total: Totals }>('GET', `${path}/conversations`).then(setData, () => setData(undefined));
  }, [path, version]);
  if (!data) return null;
  return html`<section aria-labelledby="runs-title">
    <h2 id="runs-title">Conversations</h2>
    <p class="meta" data-testid="task-usage">Tokens and cost: ${data.conversations.length ? usageText(data.total) : 'no agent runs yet'}</p>
    <ul data-testid="task-runs">${data.conversations.map((c) => {
      const cost = c.stats.cost_usd === null ? '$?' : `$${c.stats.cost_usd.toFixed(4)}`;
      return html`<li key=${c.id}>
        ${c.step_name} (attempt ${c.attempt}) · ${c.agent}${c.model ? ` ${c.model}` : ''} · ${c.status} · ${c.started_at} · ${c.stats.total_input_tokens} in / ${c.stats.total_output_tokens ?? '?'} out · ${cost}${c.stats.partial ? ' (partial)' : ''}
        <button type="button" aria-expanded=${open === c.id} onClick=${() => setOpen(open === c.id ? undefined : c.id)}>${open === c.id ? 'Hide messages' : 'Messages'}</button>
        ${open === c.id ? html`<${RunMessages} path=${`${path}/conversations/${encodeURIComponent(c.id)}`} />` : null}
      </li>`;
    })}</ul>
  </section>`;
}

/// <reference lib="dom" />
// A task's agent runs on its page: the ledger's totals (tokens and cost), each run with its step,
// model and figures, and on request its messages and tool calls, a page at a time, as text; read
// again as the task's events come (at most once a second).
import { useEffect, useRef, useState } from 'preact/hooks';
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

/**
 * One run's messages, a page at a time. While the last page is the end, each new `version` (the
 * task's events) reads that page again: messages the run added since appear without a reload.
 */
function RunMessages({ path, version }: { path: string; version: number }) {
  const loaded = useRef<{ messages: Message[]; pageCursor: string | undefined; pageStart: number }>({
    messages: [],
    pageCursor: undefined,
    pageStart: 0,
  });
  const [, redraw] = useState(0);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState('');
  const load = (after: string | undefined, start: number) =>
    api<{ messages: Message[]; next_cursor: string | null }>(
      'GET',
      `${path}/messages?limit=${PAGE}${after ? `&cursor=${encodeURIComponent(after)}` : ''}`,
    ).then(
      (p) => {
        const l = loaded.current;
        l.messages = [...l.messages.slice(0, start), ...p.messages];
        l.pageCursor = after;
        l.pageStart = start;
        setCursor(p.next_cursor);
        redraw((n) => n + 1);
      },
      (e: Error) => setError(e.message),
    );
  useEffect(() => {
    loaded.current = { messages: [], pageCursor: undefined, pageStart: 0 };
    void load(undefined, 0);
  }, [path]);
  useEffect(() => {
    if (cursor === null) void load(loaded.current.pageCursor, loaded.current.pageStart);
  }, [version]);
  return html`<div>
    <ol class="messages run-messages" data-testid="run-messages" tabindex="0" aria-label="Messages and tool calls">${loaded.current.messages.flatMap((m) => messageLines(m).map((l, i) => html`<li key=${`${m.key}-${i}`} class=${l.startsWith('tool ') || l.startsWith('→ ') ? 'tool' : `role-${m.role}`}><pre>${l}</pre></li>`))}</ol>
    ${cursor ? html`<button type="button" onClick=${() => void load(cursor, loaded.current.messages.length)}>Show more messages</button>` : null}
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </div>`;
}

/** `version` changes with the task's events: the runs and their figures are read again. */
export function TaskConversations({ path, version }: { path: string; version: number }) {
  const [data, setData] = useState<{ conversations: Run[]; total: Totals } | undefined>();
  const [open, setOpen] = useState<string | undefined>();
  // The newest run is open by itself (the agent's conversation beside its output) until the person
  // opens or closes one.
  const chosen = useRef(false);
  useEffect(() => {
    api<{ conversations: Run[]; total: Totals }>('GET', `${path}/conversations`).then(
      (d) => {
        setData(d);
        const last = d.conversations[d.conversations.length - 1];
        if (last && !chosen.current) setOpen(last.id);
      },
      () => setData(undefined),
    );
  }, [path, version]);
  if (!data) return null;
  return html`<section aria-labelledby="runs-title">
    <h2 id="runs-title">Conversations</h2>
    <p class="meta" data-testid="task-usage">Tokens and cost: ${data.conversations.length ? usageText(data.total) : 'no agent runs yet'}</p>
    <ul data-testid="task-runs">${data.conversations.map((c) => {
      const cost = c.stats.cost_usd === null ? '$?' : `$${c.stats.cost_usd.toFixed(4)}`;
      return html`<li key=${c.id}>
        ${c.step_name} (attempt ${c.attempt}) · ${c.agent}${c.model ? ` ${c.model}` : ''} · ${c.status} · ${c.started_at} · ${c.stats.total_input_tokens} in / ${c.stats.total_output_tokens ?? '?'} out · ${cost}${c.stats.partial ? ' (partial)' : ''}
        <button type="button" aria-expanded=${open === c.id} onClick=${() => {
          chosen.current = true;
          setOpen(open === c.id ? undefined : c.id);
        }}>${open === c.id ? 'Hide messages' : 'Messages'}</button>
        ${open === c.id ? html`<${RunMessages} path=${`${path}/conversations/${encodeURIComponent(c.id)}`} version=${version} />` : null}
      </li>`;
    })}</ul>
  </section>`;
}

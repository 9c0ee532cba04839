/// <reference lib="dom" />
// Conversations: the account's list, and one conversation streamed live from its event log
// (GET /conversations/{id}/events: replayed, then live) with a box for the next prompt. Every
// message, tool call and output line is text; the newest 200 lines are drawn, earlier ones on request.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, csrfToken } from './api.js';
import { html } from './html.js';
import { usePage } from './page.js';

interface Conversation {
  id: string;
  sandbox_id: string;
  status: string;
  turns: number;
  updated_at: string;
  stats?: { cost_usd?: number; total_input_tokens?: number; total_output_tokens?: number };
}

interface Line {
  id: number;
  kind: string;
  text: string;
}

const ROLE: Record<number, string> = { 1: 'you', 2: 'agent', 3: 'tool' };
/** Lines drawn at a time: the newest; earlier ones a page more per click (10,000 messages stay fast). */
export const LINES_PAGE = 200;

/** The lines to draw: the last `shown` of them, and how many earlier ones are not drawn. */
export function visibleLines<T>(all: readonly T[], shown: number): { from: number; lines: T[] } {
  const from = Math.max(0, all.length - shown);
  return { from, lines: all.slice(from) };
}

/** One event of the log as a line of the page, or nothing (events that only change the status). */
export function lineOf(type: string, data: Record<string, unknown>): { kind: string; text: string } | undefined {
  switch (type) {
    case 'message': {
      const m = data['message'] as { role?: number; body?: string } | undefined;
      // A message that only calls a tool has no text: its tool_use event is the line.
      if (!m?.body) return undefined;
      return { kind: `message role-${m.role ?? 0}`, text: `${ROLE[m.role ?? 0] ?? 'message'}: ${m.body}` };
    }
    case 'tool_use':
      return { kind: 'tool', text: `tool ${String(data['name'])}: ${JSON.stringify(data['input'] ?? {}).slice(0, 2000)}` };
    case 'tool_result':
      return { kind: 'tool', text: `→ ${String(data['status'])}: ${String(data['output'] ?? '').slice(0, 2000)}` };
    case 'output':
      return { kind: 'output', text: String(data['text'] ?? '') };
    case 'turn_started':
      return { kind: 'turn', text: `— turn ${String(data['turn'])} —` };
    case 'error':
      return { kind: 'error', text: `error: ${String(data['message'])}` };
    case 'cancelled':
      return { kind: 'error', text: `turn ${String(data['turn'])} cancelled` };
    case 'interrupted':
      return { kind: 'error', text: `turn ${String(data['turn'])} cut off: ${String(data['reason'])}` };
    case 'usage': {
      const u = data['usage'] as { total_input_tokens?: number; total_output_tokens?: number; cost_usd?: number } | undefined;
      return {
        kind: 'usage',
        text: `turn ${String(data['turn'])}: ${u?.total_input_tokens ?? 0} in / ${u?.total_output_tokens ?? 0} out tokens, $${(u?.cost_usd ?? 0).toFixed(4)}`,
      };
    }
    default:
      return undefined;
  }
}

export function ConversationList() {
  const [list, setList] = useState<Conversation[] | undefined>();
  const [error, setError] = useState('');
  usePage('Conversations');
  useEffect(() => {
    api<{ conversations: Conversation[] }>('GET', '/conversations?limit=200').then(
      (p) => setList(p.conversations),
      (e: Error) => setError(e.message),
    );
  }, []);
  const fresh = `c-${Date.now().toString(36)}`;
  return html`<section aria-label="Conversations">
    <h1>Conversations</h1>
    <p><a href=${`#/conversations/${fresh}`}>New conversation</a></p>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <ul>${(list ?? []).map((c) => html`<li><a href=${`#/conversations/${encodeURIComponent(c.id)}`}>${c.id}</a> <span class="meta">${c.status} · ${c.turns} turn(s) · ${c.updated_at}</span></li>`)}</ul>
  </section>`;
}

export function ConversationView({ id }: { id: string }) {
  // Every line is kept; events only push to this list, and the page is drawn again at most every
  // 30 ms (a replay of 10,000 events is a few renders, not 10,000).
  const all = useRef<Line[]>([]);
  const [, setCount] = useState(0);
  const [shown, setShown] = useState(LINES_PAGE);
  const [conv, setConv] = useState<Conversation | undefined>();
  const [running, setRunning] = useState(false);
  const [message, setMessage] = useState('');
  // A new conversation has no event log until its first prompt (the stream answers 404 and the
  // EventSource gives up): the stream is opened again once the prompt is accepted.
  const [streamKey, setStreamKey] = useState(0);
  const box = useRef<HTMLTextAreaElement>(null);
  const path = `/conversations/${encodeURIComponent(id)}`;
  usePage(`Conversation ${id}`);
  const load = () =>
    api<{ conversation: Conversation; running: boolean }>('GET', path).then(
      (d) => (setConv(d.conversation), setRunning(d.running)),
      () => undefined,
    );

  useEffect(() => {
    void load();
    all.current = [];
    setCount(0);
    setShown(LINES_PAGE);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const draw = () =>
      (timer ??= setTimeout(() => {
        timer = undefined;
        setCount(all.current.length);
      }, 30));
    let last = 0;
    const source = new EventSource(`${path}/events`);
    const on = (type: string) => (e: MessageEvent) => {
      const eventId = Number(e.lastEventId);
      // A reconnection replays after Last-Event-ID; a line is never added twice.
      if (eventId <= last) return;
      last = eventId;
      const line = lineOf(type, JSON.parse(String(e.data)) as Record<string, unknown>);
      if (line) all.current.push({ id: eventId, ...line }), draw();
      if (type === 'turn_started') setRunning(true);
      if (type === 'usage') setRunning(false), void load();
    };
    for (const t of ['message', 'tool_use', 'tool_result', 'output', 'turn_started', 'error', 'cancelled', 'interrupted', 'usage'])
      source.addEventListener(t, on(t) as EventListener);
    return () => (source.close(), timer && clearTimeout(timer));
  }, [id, streamKey]);

  const send = async (e: Event) => {
    e.preventDefault();
    const prompt = box.current?.value ?? '';
    if (!prompt.trim()) return;
    const sandbox = conv?.sandbox_id ?? `sb-${id}`.slice(0, 80);
    setMessage('');
    setRunning(true);
    // The answer is the turn as SSE; the page shows it from the conversation's own stream, so
    // this response is only read to its end.
    const res = await fetch(`${path}/sandbox/${encodeURIComponent(sandbox)}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken() },
      body: JSON.stringify({ prompt }),
    });
    if (!res.ok) {
      const err = ((await res.json().catch(() => ({}))) as { error?: { message?: string } }).error;
      setMessage(`not sent: ${err?.message ?? res.status}`);
      setRunning(false);
      return;
    }
    if (box.current) box.current.value = '';
    if (!conv) setStreamKey((k) => k + 1);
    await res.text().catch(() => undefined);
    void load();
  };
  const cancel = async () => {
    if (!window.confirm('Cancel the running turn?')) return;
    await api('POST', `${path}/cancel`, {}).catch((err: Error) => setMessage(`cancel refused: ${err.message}`));
  };
  const view = visibleLines(all.current, shown);
  return html`<article aria-labelledby="conv-title">
    <p><a href="#/conversations">← Conversations</a></p>
    <h1 id="conv-title">${id}</h1>
    <p class="meta" data-testid="conv-status">${conv ? `${conv.status} · ${conv.turns} turn(s)${conv.stats?.cost_usd !== undefined ? ` · $${conv.stats.cost_usd.toFixed(4)}` : ''}` : 'new'}${running ? ' · running' : ''}</p>
    ${view.from > 0 ? html`<button type="button" onClick=${() => setShown((n) => n + LINES_PAGE)}>Show earlier lines (${view.from} more)</button>` : null}
    <ol class="messages" data-testid="messages" aria-label=${`${all.current.length} lines`}>${view.lines.map((l) => html`<li key=${l.id} class=${l.kind}><pre>${l.text}</pre></li>`)}</ol>
    <form class="prompt" onSubmit=${send}>
      <label for="prompt">Next prompt</label>
      <textarea id="prompt" ref=${box} rows="3"></textarea>
      <div class="actions"><button type="submit" disabled=${running}>Send</button>${running ? html`<button type="button" onClick=${cancel}>Cancel turn</button>` : null}</div>
      ${message ? html`<p class="error" role="alert">${message}</p>` : null}
    </form>
  </article>`;
}

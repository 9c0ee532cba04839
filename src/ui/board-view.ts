/// <reference lib="dom" />
// The board: a card per task in columns by state, kept current by the account's event stream
// (GET /events through EventSource: no polling). Each task event refetches only that task.
import { useEffect, useState } from 'preact/hooks';
import type { TaskDetail, TaskSummary } from './api.js';
import { api } from './api.js';
import { columnOf, COLUMNS, recoveryAdvice } from './columns.js';
import type { BoardFilter } from './filters.js';
import { filterTasks, SINCE, templatesOf } from './filters.js';
import { html } from './html.js';

/** Cards a column draws at first; a click draws as many more. */
export const COLUMN_PAGE = 200;

const EVENT_TYPES = ['started', 'finished', 'cancelled', 'state', 'checkpoint', 'receipt', 'output', 'turn_started', 'message', 'usage', 'error'];

/** Calls `onTask(id)` for every task event of the account, live. */
export function useAccountEvents(onTask: (id: string) => void): boolean {
  const [live, setLive] = useState(false);
  useEffect(() => {
    const source = new EventSource('/events');
    const listener = (e: MessageEvent) => {
      try {
        const data = JSON.parse(String(e.data)) as { source?: { kind?: string; id?: string } };
        if (data.source?.kind === 'task' && typeof data.source.id === 'string') onTask(data.source.id);
      } catch {
        // A malformed event is ignored: the next one refreshes the card.
      }
    };
    for (const t of EVENT_TYPES) source.addEventListener(t, listener as EventListener);
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(false);
    return () => source.close();
  }, []);
  return live;
}

function Card({ t, hook }: { t: TaskSummary; hook: Record<string, unknown> | undefined }) {
  const col = columnOf(t);
  return html`<li class="card" data-task=${t.id} data-column=${col}>
    <a href=${`#/tasks/${encodeURIComponent(t.id)}`} class="card-link">${t.description || t.id}</a>
    <div class="meta">${t.template} · ${t.state} · step ${Math.min(t.step + 1, t.steps)}/${t.steps}${t.step_name ? ` (${t.step_name})` : ''}</div>
    <div class="meta">${t.id} · ${new Date(t.updated_at).toLocaleString()}</div>
    ${col === 'crashed' ? html`<p class="advice" role="note">${recoveryAdvice(t, hook)}</p>` : null}
  </li>`;
}

export function BoardView() {
  const [tasks, setTasks] = useState<Map<string, TaskSummary>>(new Map());
  const [hooks, setHooks] = useState<Map<string, Record<string, unknown>>>(new Map());
  const [error, setError] = useState('');
  const [filter, setFilter] = useState<BoardFilter>({ text: '', template: '', since: 'all' });
  // Cards drawn per column: the first COLUMN_PAGE, a page more per click.
  const [drawn, setDrawn] = useState<Record<string, number>>({});

  const refresh = (id: string) => {
    api<TaskDetail>('GET', `/tasks/${encodeURIComponent(id)}`)
      .then((d) => {
        setTasks((m) => new Map(m).set(d.task.id, d.task));
        setHooks((m) => new Map(m).set(d.task.id, d.hook));
      })
      .catch(() => undefined);
  };
  const pending = new Map<string, ReturnType<typeof setTimeout>>();
  const live = useAccountEvents((id) => {
    // Bursts of output become one fetch per task.
    if (pending.has(id)) return;
    pending.set(id, setTimeout(() => (pending.delete(id), refresh(id)), 150));
  });

  useEffect(() => {
    void (async () => {
      try {
        const all = new Map<string, TaskSummary>();
        let cursor: string | null = null;
        do {
          const page: { tasks: TaskSummary[]; next_cursor: string | null } = await api('GET', `/tasks?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          for (const t of page.tasks) all.set(t.id, t);
          cursor = all.size < 5000 ? page.next_cursor : null;
        } while (cursor);
        // The listing says why a task crashed; a card's hook (with the diagnosis) comes with its
        // next event. One request per card would run into the account's rate limit.
        setTasks(all);
      } catch (e) {
        setError((e as Error).message);
      }
    })();
  }, []);

  const shown = filterTasks(tasks.values(), filter);
  const value = (e: Event) => (e.target as HTMLInputElement | HTMLSelectElement).value;
  return html`<section aria-label="Tasks">
    <div class="toolbar">
      <label>Filter <input type="search" value=${filter.text} onInput=${(e: Event) => setFilter({ ...filter, text: value(e) })} placeholder="words, repository path" /></label>
      <label>Template <select value=${filter.template} onChange=${(e: Event) => setFilter({ ...filter, template: value(e) })}>
        <option value="">all</option>${templatesOf(tasks.values()).map((t) => html`<option value=${t}>${t}</option>`)}
      </select></label>
      <label>Changed <select value=${filter.since} onChange=${(e: Event) => setFilter({ ...filter, since: value(e) as BoardFilter['since'] })}>
        ${SINCE.map((x) => html`<option value=${x.id}>${x.label}</option>`)}
      </select></label>
      <span class=${live ? 'live on' : 'live'} aria-live="polite">${live ? 'live' : 'connecting…'}</span>
    </div>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <div class="columns">
      ${COLUMNS.map((c) => {
        const list = shown.filter((t) => columnOf(t) === c.id);
        const limit = drawn[c.id] ?? COLUMN_PAGE;
        const rest = list.length - limit;
        return html`<section class="column" data-column=${c.id} aria-label=${c.title}>
          <h2>${c.title} <span class="count">${list.length}</span></h2>
          <ul>${list.slice(0, limit).map((t) => html`<${Card} key=${t.id} t=${t} hook=${hooks.get(t.id)} />`)}</ul>
          ${rest > 0 ? html`<button type="button" onClick=${() => setDrawn({ ...drawn, [c.id]: limit + COLUMN_PAGE })}>Show ${Math.min(rest, COLUMN_PAGE)} more of ${c.title}</button>` : null}
        </section>`;
      })}
    </div>
  </section>`;
}

/// <reference lib="dom" />
// The board: a card per task in columns by state, kept current by the account's event stream
// (GET /events through EventSource: no polling). Each task event refetches only that task.
import { useEffect, useState } from 'preact/hooks';
import { stripAnsi } from './ansi.js';
import type { TaskDetail, TaskSummary } from './api.js';
import { api } from './api.js';
import { COLUMNS, columnOf, recoveryAdvice } from './columns.js';
import type { BoardFilter } from './filters.js';
import { filterFromHash, filterTasks, hashOfFilter, SINCE, templatesOf } from './filters.js';
import { duration, relativeTime, STATE_LOOK, stateText } from './format.js';
import { html } from './html.js';
import { usePage } from './page.js';

/** Cards a column draws at first; a click draws as many more. */
export const COLUMN_PAGE = 200;

const EVENT_TYPES = [
  'started',
  'finished',
  'cancelled',
  'state',
  'checkpoint',
  'receipt',
  'output',
  'turn_started',
  'message',
  'usage',
  'error',
];

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

interface CardExtra {
  step_started_at: string | null;
  last_line: string;
}

/** A card's step, how long it has run, and its last output line, from a hook the page fetched. */
export function extraOf(hook: Record<string, unknown>): CardExtra {
  const step = hook['current_step'] as { started_at?: string; last_output?: string } | undefined;
  const lines = (step?.last_output ?? '').split('\n').filter((l) => l.trim() !== '');
  const ended = ['completed', 'failed', 'abandoned'].includes(String(hook['state']));
  return { step_started_at: ended ? null : (step?.started_at ?? null), last_line: (lines[lines.length - 1] ?? '').slice(0, 300) };
}

function Card({ t, hook, extra }: { t: TaskSummary; hook: Record<string, unknown> | undefined; extra: CardExtra | undefined }) {
  const col = columnOf(t);
  const look = STATE_LOOK[col];
  // t.step is 1-based already (atlas status prints it as is).
  const since =
    extra?.step_started_at && (col === 'running' || col === 'waiting')
      ? `, ${duration(Date.now() - Date.parse(extra.step_started_at))}`
      : '';
  return html`<li class=${`card card-${col}`} data-task=${t.id} data-column=${col}>
    <a href=${`#/tasks/${encodeURIComponent(t.id)}`} class="card-link">${t.description || t.id}</a>
    <div class="meta"><span class=${`badge badge-${col}`}><span aria-hidden="true">${look.icon}</span> ${stateText(t.state, t.activity)}</span></div>
    <div class="meta" data-testid="card-step">step ${t.step}/${t.steps}${t.step_name ? ` (${t.step_name})` : ''}${since}</div>
    ${extra?.last_line ? html`<div class="last-line" data-testid="card-last-line" title=${stripAnsi(extra.last_line)}>${stripAnsi(extra.last_line)}</div>` : null}
    <div class="meta">${t.template} · <time datetime=${t.updated_at} title=${t.updated_at}>${relativeTime(t.updated_at)}</time></div>
    ${col === 'crashed' ? html`<p class="advice" role="note">${recoveryAdvice(t, hook)}</p>` : null}
  </li>`;
}

export function BoardView({ hash, readOnly }: { hash: string; readOnly: boolean }) {
  const [tasks, setTasks] = useState<Map<string, TaskSummary>>(new Map());
  const [hooks, setHooks] = useState<Map<string, Record<string, unknown>>>(new Map());
  const [extras, setExtras] = useState<Map<string, CardExtra>>(new Map());
  const [error, setError] = useState('');
  // The filter lives in the address: a reload, the back button or a shared link keeps it.
  const filter = filterFromHash(hash);
  const setFilter = (f: BoardFilter) => {
    history.replaceState(null, '', hashOfFilter(f));
    dispatchEvent(new HashChangeEvent('hashchange'));
  };
  usePage('Tasks');
  // Cards drawn per column: the first COLUMN_PAGE, a page more per click.
  const [drawn, setDrawn] = useState<Record<string, number>>({});

  const refresh = (id: string) => {
    api<TaskDetail>('GET', `/tasks/${encodeURIComponent(id)}`)
      .then((d) => {
        setTasks((m) => new Map(m).set(d.task.id, d.task));
        setHooks((m) => new Map(m).set(d.task.id, d.hook));
        setExtras((m) => new Map(m).set(d.task.id, extraOf(d.hook)));
      })
      .catch(() => undefined);
  };
  const pending = new Map<string, ReturnType<typeof setTimeout>>();
  const live = useAccountEvents((id) => {
    // Bursts of output become one fetch per task.
    if (pending.has(id)) return;
    pending.set(
      id,
      setTimeout(() => (pending.delete(id), refresh(id)), 150),
    );
  });

  useEffect(() => {
    void (async () => {
      try {
        const all = new Map<string, TaskSummary>();
        let cursor: string | null = null;
        do {
          const page: { tasks: TaskSummary[]; next_cursor: string | null } = await api(
            'GET',
            `/tasks?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
          for (const t of page.tasks) all.set(t.id, t);
          cursor = all.size < 5000 ? page.next_cursor : null;
        } while (cursor);
        // The listing says why a task crashed; a card's hook (with the diagnosis) comes with its
        // next event. One request per card would run into the account's rate limit.
        setTasks(all);
        const { cards } = await api<{ cards: ({ id: string } & CardExtra)[] }>('GET', '/board/cards');
        setExtras(new Map(cards.map((c) => [c.id, c])));
      } catch (e) {
        setError((e as Error).message);
      }
    })();
  }, []);

  const shown = filterTasks(tasks.values(), filter);
  const value = (e: Event) => (e.target as HTMLInputElement | HTMLSelectElement).value;
  return html`<section aria-labelledby="board-title">
    <div class="title-row"><h1 id="board-title">Tasks</h1>${readOnly ? null : html`<a class="button primary" href="#/new">New task</a>`}</div>
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
          <ul>${list.slice(0, limit).map((t) => html`<${Card} key=${t.id} t=${t} hook=${hooks.get(t.id)} extra=${extras.get(t.id)} />`)}</ul>
          ${rest > 0 ? html`<button type="button" onClick=${() => setDrawn({ ...drawn, [c.id]: limit + COLUMN_PAGE })}>Show ${Math.min(rest, COLUMN_PAGE)} more of ${c.title}</button>` : null}
        </section>`;
      })}
    </div>
  </section>`;
}

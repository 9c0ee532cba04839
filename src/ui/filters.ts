// The board's filters: words (in the id, template, description, workspace or worktree), a
// template, and how recently the task changed.
import type { TaskSummary } from './api.js';

export const SINCE = [
  { id: 'all', label: 'any time', ms: Infinity },
  { id: 'hour', label: 'last hour', ms: 3600_000 },
  { id: 'day', label: 'last day', ms: 86_400_000 },
  { id: 'week', label: 'last week', ms: 7 * 86_400_000 },
] as const;

export interface BoardFilter {
  text: string;
  template: string;
  since: (typeof SINCE)[number]['id'];
}

export function filterTasks(tasks: Iterable<TaskSummary & { worktree?: string }>, f: BoardFilter, now = Date.now()): TaskSummary[] {
  const words = f.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const window = SINCE.find((s) => s.id === f.since)?.ms ?? Infinity;
  const out: TaskSummary[] = [];
  for (const t of tasks) {
    if (f.template && t.template !== f.template) continue;
    if (window !== Infinity && !(now - Date.parse(t.updated_at) <= window)) continue;
    const hay = `${t.id} ${t.template} ${t.description ?? ''} ${t.workspace} ${t.worktree ?? ''}`.toLowerCase();
    if (words.every((w) => hay.includes(w))) out.push(t);
  }
  return out;
}

export function templatesOf(tasks: Iterable<TaskSummary>): string[] {
  return [...new Set([...tasks].map((t) => t.template))].sort();
}

/** The filter in the board's address (#/?q=…&template=…&since=…), so a reload or a shared link keeps it. */
export function filterFromHash(hash: string): BoardFilter {
  const q = new URLSearchParams(hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '');
  const since = q.get('since') ?? 'all';
  return {
    text: q.get('q') ?? '',
    template: q.get('template') ?? '',
    since: SINCE.some((x) => x.id === since) ? (since as BoardFilter['since']) : 'all',
  };
}

export function hashOfFilter(f: BoardFilter): string {
  const q = new URLSearchParams();
  if (f.text) q.set('q', f.text);
  if (f.template) q.set('template', f.template);
  if (f.since !== 'all') q.set('since', f.since);
  const text = q.toString();
  return text ? `#/?${text}` : '#/';
}

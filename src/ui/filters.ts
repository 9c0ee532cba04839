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

// Which column of the board a task belongs to: by its hook state and its activity (what
// `atlas status` says: running, waiting for a person, crashed or cut off, or ended).
import type { TaskSummary } from './api.js';

export const COLUMNS = [
  { id: 'running', title: 'Running' },
  { id: 'waiting', title: 'Waiting for a person' },
  { id: 'crashed', title: 'Crashed or paused' },
  { id: 'failed', title: 'Failed' },
  { id: 'completed', title: 'Completed' },
  { id: 'abandoned', title: 'Abandoned' },
] as const;

export type ColumnId = (typeof COLUMNS)[number]['id'];

export function columnOf(t: Pick<TaskSummary, 'state' | 'activity'>): ColumnId {
  if (t.state === 'completed' || t.state === 'failed' || t.state === 'abandoned') return t.state;
  // A step cut off by a stop is parked as awaiting_human too: the activity tells it apart.
  if (t.activity === 'crashed' || t.activity === 'paused' || t.activity === 'not_responding') return 'crashed';
  if (t.activity === 'waiting' || t.state === 'awaiting_human') return 'waiting';
  return 'running';
}

/** What atlas recommends for a crashed card (the hook's diagnosis when there is one). */
export function recoveryAdvice(t: TaskSummary, hook?: Record<string, unknown>): string {
  const r = hook?.['recovery'] as { recommended_action?: string; reason?: string } | undefined;
  if (r?.recommended_action) return `Recommended: ${r.recommended_action}${r.reason ? ` (${r.reason})` : ''}`;
  if (t.activity === 'not_responding') return 'Its process still exists but stopped answering: stop it, then recover';
  if (t.activity === 'paused') return `Recommended: recover (runs the cut-off step again)${t.note ? `: ${t.note}` : ''}`;
  return `Recommended: recover${t.crash_type ? ` after ${t.crash_type}` : ''}${t.note ? `: ${t.note}` : ''}`;
}

// How the board says states and times: readable state names with an icon and a colour class per
// column, times relative to now ("3 min ago"), durations ("1 h 4 min").
import type { ColumnId } from './columns.js';

/** Icon and words per column; the class colours it (style.css), the words say it (never colour alone). */
export const STATE_LOOK: Record<ColumnId, { icon: string; label: string }> = {
  running: { icon: '▶', label: 'Running' },
  waiting: { icon: '‖', label: 'Waiting for you' },
  crashed: { icon: '⚠', label: 'Stopped: needs recovery' },
  failed: { icon: '✗', label: 'Failed' },
  completed: { icon: '✓', label: 'Completed' },
  abandoned: { icon: '⊘', label: 'Abandoned' },
};

const STATE_NAMES: Record<string, string> = {
  initializing: 'starting',
  step_running: 'running a step',
  step_validating: 'validating',
  awaiting_human: 'waiting for a person',
  recovering: 'recovering',
  completed: 'completed',
  failed: 'failed',
  abandoned: 'abandoned',
};

const ACTIVITY_NAMES: Record<string, string> = {
  running: 'running',
  waiting: 'waiting for you',
  crashed: 'crashed',
  paused: 'cut off',
  not_responding: 'not responding',
  ended: 'ended',
};

/** "running a step", "waiting for a person (cut off)": a hook state and activity as words. */
export function stateText(state: string, activity?: string): string {
  const s = STATE_NAMES[state] ?? state.replace(/_/g, ' ');
  const a = activity ? (ACTIVITY_NAMES[activity] ?? activity.replace(/_/g, ' ')) : '';
  return a &&
    a !== s &&
    activity !== 'ended' &&
    !(activity === 'running' && state.startsWith('step_')) &&
    !(activity === 'waiting' && state === 'awaiting_human')
    ? `${s} (${a})`
    : s;
}

/** A length of time, coarse: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
  const d = Math.floor(h / 24);
  return `${d} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

/** "just now", "5 min ago", "in 2 min" (a clock behind the server's). */
export function relativeTime(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const diff = now - t;
  if (Math.abs(diff) < 10_000) return 'just now';
  return diff > 0 ? `${duration(diff)} ago` : `in ${duration(-diff)}`;
}

// Which column a task's card is in, the recovery advice a crashed card shows, and the filters.
import { describe, expect, it } from 'vitest';
import type { TaskSummary } from '../src/ui/api.js';
import { columnOf, recoveryAdvice } from '../src/ui/columns.js';
import type { BoardFilter } from '../src/ui/filters.js';
import { filterTasks, templatesOf } from '../src/ui/filters.js';

const task = (state: string, activity: string, extra: Partial<TaskSummary> = {}): TaskSummary => ({
  id: 't',
  workspace: 'w',
  template: 'q',
  state,
  activity,
  step: 0,
  steps: 1,
  created_at: '',
  updated_at: '',
  ...extra,
});

describe('board columns', () => {
  it('puts each hook state and activity in its column', () => {
    expect(columnOf(task('step_running', 'running'))).toBe('running');
    expect(columnOf(task('initializing', 'running'))).toBe('running');
    expect(columnOf(task('awaiting_human', 'waiting'))).toBe('waiting');
    // Cut off by a stop while its step ran: parked as awaiting_human, but it needs recovering.
    expect(columnOf(task('awaiting_human', 'paused'))).toBe('crashed');
    expect(columnOf(task('step_running', 'crashed'))).toBe('crashed');
    expect(columnOf(task('step_running', 'not_responding'))).toBe('crashed');
    expect(columnOf(task('completed', 'ended'))).toBe('completed');
    expect(columnOf(task('failed', 'ended'))).toBe('failed');
    expect(columnOf(task('abandoned', 'ended'))).toBe('abandoned');
  });

  it('says what recovery atlas recommends: the hook diagnosis first, else by activity', () => {
    expect(
      recoveryAdvice(task('step_running', 'crashed'), { recovery: { recommended_action: 'skip_step', reason: 'the commit exists' } }),
    ).toBe('Recommended: skip_step (the commit exists)');
    expect(recoveryAdvice(task('step_running', 'crashed'), { recovery: { recommended_action: 'retry_step' } })).toBe(
      'Recommended: retry_step',
    );
    expect(recoveryAdvice(task('awaiting_human', 'paused', { note: 'interrupted by SIGTERM' }))).toBe(
      'Recommended: recover (runs the cut-off step again): interrupted by SIGTERM',
    );
    expect(recoveryAdvice(task('awaiting_human', 'paused'))).toBe('Recommended: recover (runs the cut-off step again)');
    expect(recoveryAdvice(task('step_running', 'crashed', { crash_type: 'process_killed', note: 'owner gone' }))).toBe(
      'Recommended: recover after process_killed: owner gone',
    );
    expect(recoveryAdvice(task('step_running', 'crashed'))).toBe('Recommended: recover');
    expect(recoveryAdvice(task('step_running', 'not_responding'))).toMatch(/stopped answering/);
  });
});

describe('board filters', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const tasks = [
    task('step_running', 'running', {
      id: 'a',
      template: 'bugfix',
      description: 'Fix the Parser',
      updated_at: '2026-11-25T11:30:00Z',
      workspace: 'ws1',
    }),
    task('completed', 'ended', {
      id: 'b',
      template: 'feature',
      description: 'add export',
      updated_at: '2026-11-24T20:00:00Z',
      workspace: 'ws2',
    }),
    {
      ...task('failed', 'ended', { id: 'c', template: 'bugfix', updated_at: '2026-11-01T00:00:00Z', workspace: 'ws3' }),
      worktree: '/repos/billing/.atlas',
    },
  ];
  const ids = (f: Partial<BoardFilter>) => filterTasks(tasks, { text: '', template: '', since: 'all', ...f }, now).map((t) => t.id);

  it('filters by words, template and time, together', () => {
    expect(ids({})).toEqual(['a', 'b', 'c']);
    expect(ids({ text: 'parser fix' })).toEqual(['a']);
    expect(ids({ text: 'billing' })).toEqual(['c']);
    expect(ids({ template: 'bugfix' })).toEqual(['a', 'c']);
    expect(ids({ since: 'hour' })).toEqual(['a']);
    expect(ids({ since: 'day' })).toEqual(['a', 'b']);
    expect(ids({ since: 'week', template: 'feature' })).toEqual(['b']);
    expect(ids({ text: 'nothing-like-it' })).toEqual([]);
    expect(templatesOf(tasks)).toEqual(['bugfix', 'feature']);
  });
});

// Which column a task's card is in, and the recovery advice a crashed card shows.
import { describe, expect, it } from 'vitest';
import type { TaskSummary } from '../src/ui/api.js';
import { columnOf, recoveryAdvice } from '../src/ui/columns.js';

const task = (state: string, activity: string, extra: Partial<TaskSummary> = {}): TaskSummary => ({ id: 't', workspace: 'w', template: 'q', state, activity, step: 0, steps: 1, created_at: '', updated_at: '', ...extra });

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
    expect(recoveryAdvice(task('step_running', 'crashed'), { recovery: { recommended_action: 'skip_step', reason: 'the commit exists' } })).toBe('Recommended: skip_step (the commit exists)');
    expect(recoveryAdvice(task('step_running', 'crashed'), { recovery: { recommended_action: 'retry_step' } })).toBe('Recommended: retry_step');
    expect(recoveryAdvice(task('awaiting_human', 'paused', { note: 'interrupted by SIGTERM' }))).toBe('Recommended: recover (runs the cut-off step again): interrupted by SIGTERM');
    expect(recoveryAdvice(task('awaiting_human', 'paused'))).toBe('Recommended: recover (runs the cut-off step again)');
    expect(recoveryAdvice(task('step_running', 'crashed', { crash_type: 'process_killed', note: 'owner gone' }))).toBe('Recommended: recover after process_killed: owner gone');
    expect(recoveryAdvice(task('step_running', 'crashed'))).toBe('Recommended: recover');
    expect(recoveryAdvice(task('step_running', 'not_responding'))).toMatch(/stopped answering/);
  });
});

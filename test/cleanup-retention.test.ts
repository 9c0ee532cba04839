// The retention rule and the cleanup report's wording, as pure functions.
import { describe, expect, it } from 'vitest';
import { formatAge } from '../src/cleanup/age.js';
import type { CleanupReport } from '../src/cleanup/cleanup.js';
import { formatBytes, formatCleanupReport } from '../src/cleanup/format.js';
import { endedAt, retentionDecision } from '../src/cleanup/retention.js';
import type { Hook } from '../src/domain/hook.js';
import { newHook, transition } from '../src/domain/hook.js';

const H = 3_600_000;
const RETENTION = { completed: 720 * H, failed: 168 * H, abandoned: 168 * H };

function ended(state: 'completed' | 'failed' | 'abandoned', at: string): Hook {
  let hook = newHook('task-20260101-000000', 'ws', '2026-01-01T00:00:00Z');
  hook = transition(hook, { to: 'step_pending', trigger: 'setup_complete', at: '2026-01-01T00:00:01Z' });
  if (state === 'completed') return transition(hook, { to: 'completed', trigger: 'task_complete', at });
  hook = transition(hook, { to: 'step_running', trigger: 'step_start', at: '2026-01-01T00:00:02Z' });
  return transition(hook, { to: state, trigger: 'end', at });
}

describe('retention', () => {
  it("counts from the terminal transition and expires strictly after each state's retention", () => {
    const hook = ended('failed', '2026-01-10T00:00:00Z');
    expect(endedAt(hook)).toBe('2026-01-10T00:00:00Z');
    expect(retentionDecision(hook, RETENTION, new Date('2026-01-17T00:00:00Z'))).toMatchObject({ expired: false, why: 'within_retention' });
    expect(retentionDecision(hook, RETENTION, new Date('2026-01-17T00:00:01Z'))).toMatchObject({
      expired: true,
      state: 'failed',
      ageMs: 168 * H + 1000,
    });
    const completed = ended('completed', '2026-01-10T00:00:00Z');
    expect(retentionDecision(completed, RETENTION, new Date('2026-01-17T00:00:01Z'))).toMatchObject({ expired: false });
    expect(retentionDecision(completed, RETENTION, new Date('2026-02-10T00:00:00Z'))).toMatchObject({ expired: true, state: 'completed' });
  });

  it('treats a later update (e.g. a checkpoint after the end) as activity', () => {
    const hook = { ...ended('abandoned', '2026-01-01T00:00:00Z'), updated_at: '2026-01-09T00:00:00Z' };
    expect(endedAt(hook)).toBe('2026-01-09T00:00:00Z');
    expect(retentionDecision(hook, RETENTION, new Date('2026-01-12T00:00:00Z')).expired).toBe(false);
  });

  it('never expires a task that has not ended, however old', () => {
    let hook = newHook('task-20200101-000000', 'ws', '2020-01-01T00:00:00Z');
    expect(retentionDecision(hook, RETENTION, new Date('2026-01-01T00:00:00Z'))).toEqual({
      expired: false,
      why: 'active',
      state: 'initializing',
    });
    hook = transition(hook, { to: 'step_pending', trigger: 'setup_complete', at: '2020-01-01T00:00:00Z' });
    hook = transition(hook, { to: 'step_running', trigger: 'step_start', at: '2020-01-01T00:00:00Z' });
    hook = transition(hook, { to: 'awaiting_human', trigger: 'approval', at: '2020-01-01T00:00:00Z' });
    expect(retentionDecision(hook, { completed: 0, failed: 0, abandoned: 0 }, new Date()).expired).toBe(false);
  });
});

describe('cleanup report text', () => {
  it('formats sizes and ages for people', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(12_345)).toBe('12.3 kB');
    expect(formatBytes(5_600_000_000)).toBe('5.6 GB');
    expect(formatAge(30 * 60_000)).toBe('30m');
    expect(formatAge(36 * H)).toBe('36h');
    expect(formatAge(31 * 24 * H)).toBe('31d');
  });

  it('says what would go, what is kept and why, and what was left alone', () => {
    const report: CleanupReport = {
      dry_run: true,
      removed: [
        {
          task_id: 'task-20260101-000000',
          workspace: 'fix-parser',
          state: 'failed',
          description: 'fix the parser',
          ended_at: '2026-01-01T00:00:00Z',
          age_ms: 9 * 24 * H,
          retention_ms: 168 * H,
          bytes: 2048,
          worktree: { path: '/w/fix-parser', action: 'kept', reason: 'uncommitted work in 1 file (a.ts)' },
        },
      ],
      by_state: { completed: 0, failed: 1, abandoned: 0 },
      bytes_freed: 2048,
      worktrees_removed: [],
      worktrees_kept: [{ path: '/w/fix-parser', task_id: 'task-20260101-000000', reason: 'uncommitted work in 1 file (a.ts)' }],
      workspaces_removed: ['fix-parser'],
      skipped: [{ task_id: 'task-20250101-000000', workspace: 'old', dir: '/h/x', reason: 'hook.json cannot be read: bad' }],
      kept: { active: 1, within_retention: 0 },
      half_created_removed: [],
      half_created_kept: [],
      temp_files_removed: [],
      sandbox_litter_removed: [],
      server_bridges_removed: { processes: [4242], sockets: ['/tmp/claude-http-ab.sock'] },
    };
    expect(formatCleanupReport(report)).toBe(
      [
        'Would remove 1 task (1 failed), freeing 2.0 kB:',
        '  task-20260101-000000  failed     ended 9d ago (kept 7d)      2.0 kB  fix-parser',
        '      worktree would be kept: /w/fix-parser: uncommitted work in 1 file (a.ts)',
        '1 worktree would be kept; save or discard the work there, then run `git worktree remove <path>` yourself.',
        'Sandbox bridges of a killed server that would be stopped: 1 socat process(es), 1 socket(s)',
        'Workspaces that would be removed (no task left): fix-parser',
        'Left alone, 1 task that cannot be judged safely:',
        '  task-20250101-000000 (old): hook.json cannot be read: bad',
        '  Fix or remove these folders by hand if you no longer need them.',
        'Kept 1 task: 1 in progress.',
        'Nothing was changed (dry run). Run `atlas cleanup` to remove them.',
      ].join('\n'),
    );
  });
});

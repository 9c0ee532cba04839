import { describe, expect, it } from 'vitest';
import type { Hook } from '../src/domain/hook.js';
import { newHook } from '../src/domain/hook.js';
import type { Task } from '../src/domain/task.js';
import { renderHookMarkdown } from '../src/hook/markdown.js';
import { seedExampleHook } from './helpers/core-fixtures.js';

const task: Task = {
  schema_version: '1.0',
  id: 'task-20260117-143022',
  workspace_id: 'fix-null-pointer',
  template: 'bugfix',
  description: 'fix the null pointer in parseConfig',
  created_at: '2026-01-17T14:30:22Z',
  updated_at: '2026-01-17T14:30:22Z',
  status: 'step_running',
  repo_root: '/src/app',
  worktree: '/home/dev/.atlas/workspaces/fix-null-pointer/worktree',
  in_place: false,
  branch: 'fix/fix-null-pointer',
  steps: [
    { name: 'analyze', type: 'ai', prompt: 'a', idempotent: true, max_attempts: 3, on_failure: 'fail' },
    { name: 'plan', type: 'ai', prompt: 'p', max_attempts: 3, on_failure: 'fail' },
    { name: 'implement', type: 'ai', prompt: 'i', max_attempts: 3, on_failure: 'fail' },
    { name: 'validate', type: 'validation', commands: [], max_attempts: 1, on_failure: 'fail' },
  ],
};

const now = new Date('2026-01-17T14:46:00Z');

describe('HOOK.md', () => {
  it('briefs a reader on state, step, checkpoints, receipts and history', () => {
    const md = renderHookMarkdown({ hook: seedExampleHook(), task, now, maxCheckpoints: 50 });
    for (const heading of [
      '## Current step',
      '## What to do now',
      '## Do not',
      '## Steps',
      '## Validation receipts',
      '## Checkpoints',
      '## Recent history',
      '## Troubleshooting',
    ]) {
      expect(md).toContain(heading);
    }
    expect(md).toContain('**implement** (step 3 of 4, attempt 2/3)');
    expect(md).toContain('Working on: Adding nil checks for config fields');
    expect(md).toContain('`config/parser.go`, `config/parser_test.go`');
    expect(md).toContain("I've added the nil check for Server. Now adding for Database...");
    expect(md).toContain('`ckpt-a1b2c3d4`');
    expect(md).toContain('`rcpt-00000001`');
    expect(md).toContain('atlas recover --task task-20260117-143022');
  });

  it('is deterministic for a given hook and clock', () => {
    const a = renderHookMarkdown({ hook: seedExampleHook(), task, now });
    const b = renderHookMarkdown({ hook: seedExampleHook(), task, now });
    expect(a).toBe(b);
  });

  it('renders with no current step, no task and empty lists', () => {
    const md = renderHookMarkdown({ hook: newHook('task-20260117-143022', 'ws', '2026-01-17T14:30:22Z'), now });
    expect(md).toContain('No step is active.');
    expect(md).toContain('No checkpoints yet.');
    expect(md).toContain('No validation receipts yet.');
  });

  it('explains a crash for a person and for a fresh AI session', () => {
    const hook: Hook = {
      ...seedExampleHook(),
      state: 'recovering',
      recovery: {
        detected_at: '2026-01-17T14:50:00Z',
        crash_type: 'signal',
        last_known_state: 'step_running',
        was_validating: false,
        partial_output: 'Now adding for Database...',
        recommended_action: 'retry_from_checkpoint',
        reason: 'checkpoint ckpt-a1b2c3d4 of this step was made after it started',
        last_checkpoint_id: 'ckpt-a1b2c3d4',
      },
    };
    const md = renderHookMarkdown({ hook, task, now });
    expect(md).toContain('A crash was detected at 2026-01-17T14:50:00Z (signal)');
    expect(md).toContain('Recommended action: **retry_from_checkpoint**');
    expect(md).toContain('**For a person:**');
    expect(md).toContain('**For an AI session:**');
  });

  it('survives hostile content: pipes, backticks, fences, newlines, control characters', () => {
    const odd = 'a|b `c` ``` ~~~ \n\r\t\u0000 <script> **x** [y](z) 😀';
    const hook: Hook = {
      ...seedExampleHook(),
      task_id: odd,
      current_step: { ...seedExampleHook().current_step!, step_name: odd, working_on: odd, last_output: odd, files_touched: [odd, '`'] },
      history: [
        ...seedExampleHook().history,
        { timestamp: '2026-01-17T14:31:00Z', from_state: 'step_pending', to_state: 'step_running', trigger: odd, step_name: odd },
      ],
    };
    hook.checkpoints[0]!.description = odd;
    hook.receipts[0]!.command = odd;
    const md = renderHookMarkdown({ hook, task: { ...task, description: odd, branch: odd, steps: [] }, now });
    // Table rows stay one line each: no raw newline inside a cell.
    for (const line of md.split('\n').filter((l) => l.startsWith('|'))) expect(line.endsWith('|')).toBe(true);
    // The last output block is closed by a fence longer than any run inside it.
    expect(md).toMatch(/~~~~text\n[\s\S]*\n~~~~/);
  });

  it('shows verification statuses the caller computed', () => {
    const md = renderHookMarkdown({ hook: seedExampleHook(), task, now, receiptStatuses: ['✗ signature invalid'] });
    expect(md).toContain('✗ signature invalid');
  });
});

// HOOK.md's "What to do now" around recovery: written for a person and for a fresh AI session.
import { describe, expect, it } from 'vitest';
import type { Hook } from '../src/domain/hook.js';
import { newHook, recordEvent, transition } from '../src/domain/hook.js';
import { diagnoseCrash } from '../src/domain/recovery-rules.js';
import type { Task } from '../src/domain/task.js';
import { renderHookMarkdown } from '../src/hook/markdown.js';
import { completeSteps, defaultSteps, runStep } from './helpers/recovery-fixtures.js';

const at = '2026-01-17T14:40:00Z';
const task: Task = {
  schema_version: '1.0',
  id: 'task-20260117-143022',
  workspace_id: 'fix-null-pointer',
  template: 'bugfix',
  description: 'fix the null pointer in parseConfig',
  created_at: at,
  updated_at: at,
  status: 'step_running',
  repo_root: '/repo',
  worktree: '/repo/.worktrees/fix',
  in_place: false,
  branch: 'fix/fix-null-pointer',
  steps: defaultSteps(),
};
const now = new Date('2026-01-17T15:00:00Z');
const whatToDo = (hook: Hook) => {
  const md = renderHookMarkdown({ hook, task, now });
  return md.slice(md.indexOf('## What to do now'), md.indexOf('## Do not'));
};

function crashed(hook: Hook): Hook {
  const recovery = diagnoseCrash({ hook, steps: task.steps, liveness: 'gone', now: '2026-01-17T14:50:00Z' });
  const moved = transition(hook, {
    to: 'recovering',
    trigger: 'crash_detected',
    at: '2026-01-17T14:50:00Z',
    details: { liveness: 'process 4242 is no longer running' },
  });
  return { ...moved, recovery };
}

const base = () => newHook(task.id, task.workspace_id, '2026-01-17T14:30:00Z');

describe('HOOK.md after a crash', () => {
  it('between steps: says nothing was cut off and names the next step', () => {
    const text = whatToDo(crashed(completeSteps(base(), task, 2, at)));
    expect(text).toContain(
      'A crash was detected at 2026-01-17T14:50:00Z (signal: process 4242 is no longer running). The task was in **step_pending**, between steps.',
    );
    expect(text).toContain('Recommended action: **retry_step**');
    expect(text).toContain('no step was cut off; the task continues with the next step, **validate**');
    expect(text).toContain('`atlas recover --task task-20260117-143022 --yes`');
  });

  it('an idempotent step cut off: the AI session is told to check the tree and continue', () => {
    const text = whatToDo(crashed(runStep(completeSteps(base(), task, 0, at), task, 0, at, { last_output: 'reading parser.go' })));
    expect(text).toContain('during step **analyze** (attempt 1/3)');
    expect(text).toContain('step **analyze** will run again on the current tree');
    expect(text).toContain('reading parser.go');
    for (const action of ['retry_step', 'retry_from_checkpoint', 'skip_step', 'manual']) expect(text).toContain(`- \`${action}\`:`);
  });

  it('an interrupted task tells how to continue it', () => {
    const hook = transition(runStep(completeSteps(base(), task, 1, at), task, 1, at), {
      to: 'awaiting_human',
      trigger: 'interrupted',
      at,
      details: { reason: 'SIGINT' },
    });
    const text = whatToDo(hook);
    expect(text).toContain('The task was interrupted (Ctrl+C or SIGTERM) during step **implement**: SIGINT.');
    expect(text).toContain('`atlas recover --task task-20260117-143022`');
  });

  it('a step running again after recovery says so, with the checkpoint and the saved branch', () => {
    let hook = crashed(runStep(completeSteps(base(), task, 1, at), task, 1, at));
    hook = recordEvent(hook, {
      trigger: 'work_saved',
      at,
      details: { branch: 'atlas/recovery/task-20260117-143022/20260117-145001', commit: 'c'.repeat(40), files: 1 },
    });
    hook = recordEvent(hook, { trigger: 'checkpoint_restored', at, details: { checkpoint_id: 'ckpt-a1b2c3d4', commit: 'a'.repeat(40) } });
    hook = transition(hook, { to: 'step_running', trigger: 'step_start', at, details: { step_index: 1 } });
    const md = renderHookMarkdown({ hook, task, now });
    expect(md).toContain(
      'This step is running again after a crash at 2026-01-17T14:50:00Z (signal). The working tree was reset to checkpoint `ckpt-a1b2c3d4`; the changes made after it are on branch `atlas/recovery/task-20260117-143022/20260117-145001`.',
    );
    expect(md).toContain('## Saved work');
    expect(md).toContain('(1 changed path)');
    expect(md).toContain('`git -C /repo/.worktrees/fix checkout atlas/recovery/task-20260117-143022/20260117-145001 -- .`');
  });
});

// The board's pure pieces (issue 38): ANSI colours as classes (escapes never reach the text), a
// git diff as files with counts, HOOK.md's Markdown as known blocks only, readable states and
// times, the filter in the address, the proof marks, and what a stopped or failed task's page says.
import { describe, expect, it } from 'vitest';
import type { Hook } from '../src/domain/hook.js';
import type { Task } from '../src/domain/task.js';
import { cardOf } from '../src/server/api/board-routes.js';
import { failureOf, recoveryPlan } from '../src/server/board/board-recovery.js';
import { ansiRuns, stripAnsi } from '../src/ui/ansi.js';
import { parseDiff } from '../src/ui/diff.js';
import { filterFromHash, hashOfFilter } from '../src/ui/filters.js';
import { duration, relativeTime, stateText } from '../src/ui/format.js';
import { inline, parseMarkdown } from '../src/ui/markdown.js';
import { markOf } from '../src/ui/proof-view.js';
import { waitTrigger } from '../src/ui/task-view.js';

describe('ANSI output', () => {
  it('turns SGR colours into classes and drops every other escape', () => {
    expect(ansiRuns('\x1b[31mred\x1b[0m plain').runs).toEqual([
      { text: 'red', cls: 'ansi-fg-1' },
      { text: ' plain', cls: '' },
    ]);
    expect(ansiRuns('\x1b[1;92;44mx\x1b[22;39;49my').runs).toEqual([
      { text: 'x', cls: 'ansi-fg-10 ansi-bg-4 ansi-bold' },
      { text: 'y', cls: '' },
    ]);
    expect(ansiRuns('\x1b[2;3;4mz\x1b[23;24m.').runs).toEqual([
      { text: 'z', cls: 'ansi-dim ansi-italic ansi-underline' },
      { text: '.', cls: 'ansi-dim' },
    ]);
    expect(ansiRuns('\x1b[38;5;3ma\x1b[38;5;200mb\x1b[48;2;1;2;3mc\x1b[100md').runs.map((r) => r.cls)).toEqual([
      'ansi-fg-3',
      '',
      'ansi-bg-8',
    ]);
    expect(ansiRuns('\x1b[48;5;1mq\x1b[48;5;99mr').runs.map((r) => r.cls)).toEqual(['ansi-bg-1', '']);
    // Cursor moves, titles, links and lone escapes: gone; <tags> stay text.
    expect(stripAnsi('\x1b[2K\x1b[1Gdone\x1b]0;title\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b7<b>')).toBe('done link <b>');
    expect(ansiRuns('\x1b[?25lhidden').runs).toEqual([{ text: 'hidden', cls: '' }]);
  });

  it('carries the colour from one line to the next', () => {
    const first = ansiRuns('\x1b[32mstart');
    expect(ansiRuns('still green\x1b[m', first.pen).runs).toEqual([{ text: 'still green', cls: 'ansi-fg-2' }]);
  });
});

describe('diffs', () => {
  it('splits a git diff into files with their lines and counts', () => {
    const text = [
      'diff --git a/src/a.ts b/src/a.ts',
      'index 1111111..2222222 100644',
      '--- a/src/a.ts',
      '+++ b/src/a.ts',
      '@@ -1,3 +1,3 @@',
      ' keep',
      '-old',
      '+new',
      '+more',
      '\\ No newline at end of file',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-bye',
      'diff --git a/new.txt b/new.txt',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/new.txt',
      '@@ -0,0 +1 @@',
      '+hi',
      'diff --git a/old name.txt b/new name.txt',
      'similarity index 100%',
      'rename from old name.txt',
      'rename to new name.txt',
      'diff --git "a/q\\"x" "b/q\\"x"',
      'Binary files a/q"x and b/q"x differ',
    ].join('\n');
    const files = parseDiff(text);
    expect(files.map((f) => [f.path, f.oldPath, f.status, f.added, f.removed])).toEqual([
      ['src/a.ts', undefined, 'modified', 2, 1],
      ['gone.txt', undefined, 'deleted', 0, 1],
      ['new.txt', undefined, 'added', 1, 0],
      ['new name.txt', 'old name.txt', 'renamed', 0, 0],
      ['q"x', undefined, 'binary', 0, 0],
    ]);
    expect(files[0]!.lines.map((l) => l.kind)).toEqual(['hunk', 'ctx', 'del', 'add', 'add', 'meta']);
    expect(files[3]!.lines.map((l) => l.text)).toEqual(['similarity index 100%', 'rename from old name.txt', 'rename to new name.txt']);
    expect(parseDiff('')).toEqual([]);
    expect(parseDiff('noise before\n')).toEqual([]);
  });
});

describe('HOOK.md as Markdown', () => {
  it('reads headings, paragraphs, lists, code, quotes, rules and tables; HTML stays text', () => {
    const md = [
      '# Task <img src=x onerror=alert(1)>',
      '',
      'Some **bold**, *em*, _also em_ and ``co`de`` and `x`.',
      'same paragraph',
      '',
      '- one',
      '* two',
      '1. first',
      '2) second',
      '> quoted',
      '---',
      '~~~text',
      '<script>x</script>',
      '~~~',
      '    indented code',
      '    more',
      '| | |',
      '|---|---|',
      '| State | **running** \\| yes |',
      '| Key | `v` |',
      '',
      '| A | B |',
      '|:--|--:|',
      '| 1 | 2 |',
      '[link](javascript:alert(1))',
    ].join('\r\n');
    const blocks = parseMarkdown(md);
    expect(blocks.map((b) => b.kind)).toEqual(['h', 'p', 'ul', 'ol', 'quote', 'hr', 'pre', 'pre', 'table', 'table', 'p']);
    expect(blocks[0]).toEqual({ kind: 'h', level: 1, inline: [{ kind: 'text', text: 'Task <img src=x onerror=alert(1)>' }] });
    expect(blocks[1]).toEqual({
      kind: 'p',
      inline: [
        { kind: 'text', text: 'Some ' },
        { kind: 'strong', text: 'bold' },
        { kind: 'text', text: ', ' },
        { kind: 'em', text: 'em' },
        { kind: 'text', text: ', ' },
        { kind: 'em', text: 'also em' },
        { kind: 'text', text: ' and ' },
        { kind: 'code', text: 'co`de' },
        { kind: 'text', text: ' and ' },
        { kind: 'code', text: 'x' },
        { kind: 'text', text: '. same paragraph' },
      ],
    });
    expect(blocks[6]).toEqual({ kind: 'pre', text: '<script>x</script>' });
    expect(blocks[7]).toEqual({ kind: 'pre', text: 'indented code\nmore' });
    const table = blocks[8] as Extract<(typeof blocks)[number], { kind: 'table' }>;
    expect(table.head).toEqual([[], []]);
    expect(table.rows[0]).toEqual([
      [{ kind: 'text', text: 'State' }],
      [
        { kind: 'strong', text: 'running' },
        { kind: 'text', text: ' | yes' },
      ],
    ]);
    expect((blocks[9] as typeof table).rows).toEqual([[[{ kind: 'text', text: '1' }], [{ kind: 'text', text: '2' }]]]);
    expect(blocks[10]).toEqual({ kind: 'p', inline: [{ kind: 'text', text: '[link](javascript:alert(1))' }] });
    expect(inline('snake_case_name stays')).toEqual([{ kind: 'text', text: 'snake_case_name stays' }]);
    expect(parseMarkdown('```\nunclosed')).toEqual([{ kind: 'pre', text: 'unclosed' }]);
  });
});

describe('words and times', () => {
  it('says states as people read them', () => {
    expect(stateText('step_running', 'running')).toBe('running a step');
    expect(stateText('awaiting_human', 'waiting')).toBe('waiting for a person');
    expect(stateText('awaiting_human', 'paused')).toBe('waiting for a person (cut off)');
    expect(stateText('step_running', 'crashed')).toBe('running a step (crashed)');
    expect(stateText('completed', 'ended')).toBe('completed');
    expect(stateText('some_new_state', 'odd_activity')).toBe('some new state (odd activity)');
    expect(stateText('failed')).toBe('failed');
  });

  it('says durations and times relative to now', () => {
    expect([
      duration(4_000),
      duration(125_000),
      duration(3_600_000),
      duration(3_900_000),
      duration(86_400_000),
      duration(90_000_000),
      duration(-5),
    ]).toEqual(['4 s', '2 min', '1 h', '1 h 5 min', '1 d', '1 d 1 h', '0 s']);
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(relativeTime('2026-01-01T11:59:55Z', now)).toBe('just now');
    expect(relativeTime('2026-01-01T11:55:00Z', now)).toBe('5 min ago');
    expect(relativeTime('2026-01-01T12:02:00Z', now)).toBe('in 2 min');
    expect(relativeTime('not a time', now)).toBe('not a time');
  });

  it("keeps the board's filter in the address", () => {
    const f = { text: 'fix login', template: 'bugfix', since: 'day' as const };
    expect(hashOfFilter(f)).toBe('#/?q=fix+login&template=bugfix&since=day');
    expect(filterFromHash(hashOfFilter(f))).toEqual(f);
    expect(hashOfFilter({ text: '', template: '', since: 'all' })).toBe('#/');
    expect(filterFromHash('#/')).toEqual({ text: '', template: '', since: 'all' });
    expect(filterFromHash('#/?since=forever').since).toBe('all');
  });
});

describe('proof and waiting', () => {
  it('tells passed, failed and invalid receipts apart', () => {
    expect(markOf({ valid: true, exit_code: 0 })).toBe('passed');
    expect(markOf({ valid: true, exit_code: 1 })).toBe('failed');
    expect(markOf({ valid: false, exit_code: 0 })).toBe('invalid');
    expect(markOf(undefined)).toBe('unchecked');
  });

  it('finds why a task waits', () => {
    expect(
      waitTrigger([
        { to_state: 'step_running', from_state: 'step_pending', trigger: 'step_start' },
        { to_state: 'awaiting_human', from_state: 'step_running', trigger: 'step_failed' },
        { to_state: 'awaiting_human', from_state: 'awaiting_human', trigger: 'note' },
      ]),
    ).toBe('step_failed');
    expect(waitTrigger([])).toBeUndefined();
  });
});

const at = '2026-01-01T12:00:00Z';
function hookOf(over: Partial<Hook>): Hook {
  return {
    version: '1',
    task_id: 'task-20260101-120000',
    state: 'step_running',
    created_at: at,
    updated_at: at,
    history: [],
    checkpoints: [],
    receipts: [],
    ...over,
  } as unknown as Hook;
}
const task = {
  steps: [
    { name: 'work', type: 'command', run: ['x'], max_attempts: 1, on_failure: 'fail' },
    { name: 'after', type: 'command', run: ['y'], max_attempts: 1, on_failure: 'fail' },
  ],
} as unknown as Task;

describe("what a stopped or failed task's page says", () => {
  it("gives a stopped task's diagnosis and every action, from the hook alone", () => {
    const hook = hookOf({
      history: [
        {
          timestamp: at,
          from_state: 'step_pending',
          to_state: 'step_running',
          trigger: 'step_start',
          step_name: 'work',
          details: { step_index: 0 },
        },
      ],
      current_step: {
        step_index: 0,
        step_name: 'work',
        started_at: at,
        attempt: 1,
        max_attempts: 1,
        working_on: 'x',
        last_output: 'one\ntwo\n',
      } as Hook['current_step'],
    });
    const plan = recoveryPlan(task, hook, at);
    expect(plan.diagnosed).toBe(false);
    expect(plan.recovery.recommended_action).toBe('manual');
    expect(plan.last_output).toBe('one\ntwo\n');
    expect(plan.options.map((o) => [o.action, Boolean(o.unavailable)])).toEqual([
      ['retry_step', false],
      ['retry_from_checkpoint', true],
      ['skip_step', false],
      ['manual', false],
    ]);
    const diagnosed = recoveryPlan(task, { ...hook, recovery: { ...plan.recovery, recommended_action: 'retry_step', reason: 'r' } }, at);
    expect([diagnosed.diagnosed, diagnosed.recovery.reason]).toEqual([true, 'r']);
    expect(cardOf(hook)).toEqual({ step_started_at: at, last_line: 'two' });
    expect(cardOf(hookOf({ state: 'completed' }))).toEqual({ step_started_at: null, last_line: '' });
  });

  it("says why a task failed, with its failing receipts' output files", () => {
    const receipt = (exit: number, n: number) => ({
      receipt_id: `rcpt-${n}`,
      step_name: 'work',
      exit_code: exit,
      stdout_artifact: `artifacts/work/${n}-stdout.log`,
      stderr_artifact: `artifacts/work/${n}-stderr.log`,
    });
    const failed = hookOf({
      state: 'failed',
      receipts: [receipt(0, 1), receipt(2, 2)] as unknown as Hook['receipts'],
      history: [
        {
          timestamp: at,
          from_state: 'step_validating',
          to_state: 'failed',
          trigger: 'step_failed',
          step_name: 'work',
          details: { error: 'npm test exited 2' },
        },
      ],
    });
    expect(failureOf(failed)).toEqual({
      step_name: 'work',
      error: 'npm test exited 2',
      artifacts: ['artifacts/work/2-stdout.log', 'artifacts/work/2-stderr.log'],
      last_output: '',
    });
    const rejected = hookOf({
      state: 'failed',
      history: [{ timestamp: at, from_state: 'awaiting_human', to_state: 'failed', trigger: 'human_rejected', details: { note: 'no' } }],
    });
    expect(failureOf(rejected)).toMatchObject({ step_name: null, error: 'rejected: no', artifacts: [] });
    expect(
      failureOf(hookOf({ state: 'failed', history: [{ timestamp: at, from_state: 'step_running', to_state: 'failed', trigger: 'odd' }] }))
        ?.error,
    ).toBe('odd');
    expect(failureOf(hookOf({}))).toBeUndefined();
  });
});

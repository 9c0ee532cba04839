// The conversation readers, the ledger and their renderings in-process, over files written in
// the documented format: validation of every field, torn lines, tails of long files, totals that
// keep unknowns unknown.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { conversationView } from '../src/conversation/hook-view.js';
import { conversationFiles } from '../src/conversation/paths.js';
import { listConversations, readConversationRecord, readLastMessages, readMessages } from '../src/conversation/read.js';
import { addFigures, costText, emptyTotals, formatCost, outputText, totalsJson, totalsLine, totalsOf } from '../src/conversation/totals.js';
import { toolInputLine, transcript } from '../src/conversation/transcript.js';
import { checkConversationRecord, checkMessage, checkStats } from '../src/conversation/validate-record.js';
import { newHook } from '../src/domain/hook.js';
import type { Task } from '../src/domain/task.js';
import { compareText, groupThousands } from '../src/domain/text-order.js';
import { renderHookMarkdown } from '../src/hook/markdown.js';
import { collectUsage, parseSince } from '../src/usage/collect.js';
import { formatUsageTable, usageJson } from '../src/usage/format.js';
import { message, partialStats, record, stats, toolCall, writeConversation } from './helpers/conversation-fixtures.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'atlas-ledger-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function warnings(): { list: string[]; warn: (t: string) => void } {
  const list: string[] = [];
  return { list, warn: (t) => list.push(t) };
}

describe('validation of conversation files', () => {
  it('accepts the documented format and fills optional fields', () => {
    const r = record('task-20260101-000000');
    const { model: _m, session_id: _s, ...noOptional } = { ...r, ended_at: undefined, continues: undefined };
    const checked = checkConversationRecord(noOptional);
    expect(checked).toMatchObject({ ok: true, value: { model: '', session_id: '', ended_at: null, continues: null } });
    const m = checkMessage({ key: 'a', conversation_id: r.id, body: '', role: 3, timestamp: 1, tool_calls: null });
    expect(m).toMatchObject({ ok: true, value: { tokens: 0, tool_calls: [] } });
    const call = checkMessage({ ...message(r.id), tool_calls: [{ id: 't', name: 'Read', status: 'pending' }] });
    expect(call).toMatchObject({
      ok: true,
      value: { tool_calls: [{ id: 't', type: 'tool_use', name: 'Read', input: {}, output: '', status: 'pending', error: '' }] },
    });
  });

  it('refuses each kind of bad value with the reason', () => {
    const r = record('task-20260101-000000');
    const bad = (over: Record<string, unknown>) => {
      const c = checkConversationRecord({ ...r, ...over });
      return c.ok ? 'ok' : c.problem;
    };
    expect(checkConversationRecord([])).toEqual({ ok: false, problem: 'not a JSON object' });
    expect(bad({ id: '../x' })).toMatch(/^id is not a conversation id/);
    expect(bad({ task_id: 5 })).toBe('task_id is not text');
    expect(bad({ model: 5 })).toBe('model is not text');
    expect(bad({ attempt: 0 })).toBe('attempt is not a whole number from 1');
    expect(bad({ ended_at: 5 })).toBe('ended_at is not a time or null');
    expect(bad({ status: 'done' })).toMatch(/^status is not one of/);
    expect(bad({ continues: 5 })).toBe('continues is not a conversation id or null');
    expect(bad({ stats: null })).toBe('stats is not an object');
    expect(bad({ stats: { ...stats(), total_input_tokens: -1 } })).toBe('stats.total_input_tokens is not a count');
    expect(bad({ stats: { ...stats(), total_output_tokens: 'many' } })).toBe('stats.total_output_tokens is not a count or null');
    expect(bad({ stats: { ...stats(), cost_usd: '1' } })).toBe('stats.cost_usd is not a number or null');
    expect(bad({ stats: { ...stats(), partial: 'no' } })).toBe('stats.partial is not true or false');
    expect(bad({ stats: { ...stats(), models: {} } })).toBe('stats.models is not a list');
    expect(bad({ stats: { ...stats(), models: [{}] } })).toBe('stats.a models row without a model name');
    expect(bad({ stats: { ...stats(), models: [{ model: 'm', input_tokens: 1 }] } })).toBe(
      'stats.models row m: output_tokens is not a count',
    );
    expect(
      bad({
        stats: {
          ...stats(),
          models: [{ model: 'm', input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: 'x' }],
        },
      }),
    ).toBe('stats.models row m: cost_usd is not a number or null');
    expect(checkStats({ ...stats(), models: undefined })).toMatchObject({ ok: true, value: { models: [] } });

    const msg = (over: Record<string, unknown>) => {
      const c = checkMessage({ ...message(r.id), ...over });
      return c.ok ? 'ok' : c.problem;
    };
    expect(checkMessage('x')).toEqual({ ok: false, problem: 'not a JSON object' });
    expect(msg({ key: 1 })).toBe('key or conversation_id is not text');
    expect(msg({ body: null })).toBe('body is not text');
    expect(msg({ role: 4 })).toMatch(/^role is not 1/);
    expect(msg({ timestamp: -1 })).toBe('timestamp is not unix seconds');
    expect(msg({ tokens: 'x' })).toBe('tokens is not a count');
    expect(msg({ tool_calls: {} })).toBe('tool_calls is not a list');
    expect(msg({ tool_calls: [1] })).toBe('tool_calls[0] is not an object');
    expect(msg({ tool_calls: [{ id: 't' }] })).toBe('tool_calls[0] has no id or name');
    expect(msg({ tool_calls: [{ id: 't', name: 'n', status: 'done' }] })).toMatch(/^tool_calls\[0\]\.status is not one of/);
  });
});

describe('reading conversations', () => {
  it('lists valid conversations oldest first and skips, with a warning, what is not one', () => {
    const w = warnings();
    expect(listConversations(dir, w.warn)).toEqual([]);
    const late = record('t', { started_at: '2026-01-02T00:00:00Z' });
    const early = record('t', { started_at: '2026-01-01T00:00:00Z' });
    const same = record('t', { started_at: '2026-01-02T00:00:00Z' });
    for (const r of [late, early, same]) writeConversation(dir, r);
    mkdirSync(join(dir, 'conversations', 'not-a-conversation'), { recursive: true });
    mkdirSync(join(dir, 'conversations', 'conv-00000000ffff'), { recursive: true }); // no conversation.json yet
    const moved = record('t');
    const movedDir = writeConversation(dir, moved);
    writeFileSync(join(movedDir, 'conversation.json'), JSON.stringify({ ...moved, id: 'conv-aaaaaaaaaaaa' }));
    // same start: by id (ids grow in creation order)
    expect(listConversations(dir, w.warn).map((c) => c.id)).toEqual([early.id, late.id, same.id]);
    expect(w.list).toEqual([expect.stringContaining(`its id conv-aaaaaaaaaaaa is not its folder's name; skipped`)]);
  });

  it('reads whole messages line by line, skipping invalid lines with a warning and the line in flight silently, and the tail of a long file', () => {
    const w = warnings();
    const r = record('t');
    const many = Array.from({ length: 3000 }, (_, i) => message(r.id, { body: `message ${i} ${'x'.repeat(100)}` }));
    writeConversation(dir, r, many);
    const path = conversationFiles(dir, r.id).messages;
    writeFileSync(path, `${many.map((m) => JSON.stringify(m)).join('\n')}\n{"role":9}\nnot json\n{"torn`, { flag: 'w' });
    expect(readMessages(path, w.warn)).toHaveLength(3000);
    expect(w.list).toEqual([expect.stringContaining('2 lines not a valid message; skipped')]);
    const last = readLastMessages(path, 3);
    expect(last.map((m) => m.body.split(' ').slice(0, 2).join(' '))).toEqual(['message 2997', 'message 2998', 'message 2999']);
    expect(readMessages(join(dir, 'missing.jsonl'))).toEqual([]);
    expect(readLastMessages(join(dir, 'missing.jsonl'), 3)).toEqual([]);
    expect(readConversationRecord(dir, '../../etc')).toBeUndefined();
    expect(readConversationRecord(dir, r.id)?.id).toBe(r.id);
  });
});

describe('totals', () => {
  it('keep unknown output and cost unknown: exact, lower bound or ?', () => {
    const exact = totalsOf([stats({ total_output_tokens: 20, cost_usd: 0.5 })]);
    expect([outputText(exact), costText(exact)]).toEqual(['20', '$0.50']);
    const some = totalsOf([stats({ total_output_tokens: 1234 }), partialStats()]);
    expect([outputText(some), costText(some)]).toEqual(['≥1,234', '≥$0.01']);
    expect(totalsJson(some)).toMatchObject({ output_tokens: 1234, output_tokens_complete: false, cost_complete: false, partial: 1 });
    const none = totalsOf([partialStats(), partialStats()]);
    expect([outputText(none), costText(none)]).toEqual(['?', '?']);
    expect(totalsJson(none)).toMatchObject({ output_tokens: null, cost_usd: null });
    expect(totalsJson(emptyTotals())).toMatchObject({ output_tokens: 0, cost_usd: 0, output_tokens_complete: true });
    expect([formatCost(0), formatCost(0.001234), formatCost(12.345)]).toEqual(['$0', '$0.0012', '$12.35']);
    expect(totalsLine(totalsOf([stats({ cache_read_tokens: 5 })]))).toBe('100 in (+5 cache) / 20 out · $0.01 · 1 run');
    expect(totalsLine(totalsOf([stats(), partialStats()]))).toBe('200 in / ≥20 out · ≥$0.01 · 2 runs, 1 partial');
    // a second model row of one run is not a second conversation
    const models = addFigures(
      addFigures(emptyTotals(), {
        input_tokens: 1,
        cache_read_tokens: 0,
        cache_creation_tokens: 0,
        output_tokens: 1,
        cost_usd: 1,
        partial: false,
      }),
      { input_tokens: 1, cache_read_tokens: 0, cache_creation_tokens: 0, output_tokens: 1, cost_usd: 1, partial: false },
      false,
    );
    expect([models.rows, models.conversations]).toEqual([2, 1]);
  });

  it('group thousands and order text as en-US and code units would, without loading Intl', () => {
    for (const n of [0, 7, 999, 1000, 12345, 1234567, 1000000000, 1234.5])
      expect(groupThousands(n)).toBe(n.toLocaleString('en-US', { maximumFractionDigits: 20 }));
    expect(['b', 'B', 'a', '2026-01-02', '2026-01-01T10'].sort(compareText)).toEqual(['2026-01-01T10', '2026-01-02', 'B', 'a', 'b']);
    expect(compareText('x', 'x')).toBe(0);
  });
});

describe('usage collection', () => {
  function home(): string {
    const h = join(dir, 'home');
    const taskDir = join(h, 'workspaces', 'ws', 'tasks', 'task-20260101-000000');
    mkdirSync(taskDir, { recursive: true });
    writeConversation(
      taskDir,
      record('task-20260101-000000', {
        stats: stats({
          models: [{ model: 'opus', input_tokens: 100, output_tokens: 20, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: null }],
        }),
      }),
    );
    writeConversation(taskDir, record('task-20260101-000000', { model: '', started_at: '2026-01-11T00:00:00Z', stats: partialStats() }));
    return h;
  }

  it('groups, filters, and renders a table and JSON', () => {
    const h = home();
    const w = warnings();
    const byModel = collectUsage({ home: h, by: 'model', warn: w.warn });
    expect(byModel.rows.map((r) => [r.key, r.totals.conversations, outputText(r.totals), costText(r.totals)])).toEqual([
      ['(unknown)', 1, '?', '?'],
      ['opus', 1, '20', '?'],
    ]);
    // the template of a task without task.json is unknown
    expect(collectUsage({ home: h, by: 'template', warn: w.warn }).rows[0]!.key).toBe('(unknown)');
    const table = formatUsageTable(byModel);
    expect(table.split('\n')[0]).toMatch(/^MODEL\s+RUNS/);
    expect(table).toContain('partial: a run cut off');
    expect(usageJson(byModel).rows[1]).toMatchObject({ model: 'opus', cost_usd: null, cost_complete: false });
    const none = collectUsage({ home: h, by: 'task', taskId: 'task-20260101-000000', sinceMs: parseSince('2027-01-01'), warn: w.warn });
    expect(formatUsageTable(none)).toBe('no agent conversations in task task-20260101-000000 since 2027-01-01T00:00:00Z');
    expect(() => collectUsage({ home: h, by: 'task', taskId: 'task-20990101-000000', warn: w.warn })).toThrow(
      'no task task-20990101-000000',
    );
    expect(() => parseSince('2026-13-45')).toThrow('--since expects a date');
    expect(parseSince('2026-01-31T12:00:00Z')).toBe(Date.parse('2026-01-31T12:00:00Z'));
    expect(w.list).toEqual([]);
  });
});

describe('transcripts and HOOK.md', () => {
  it('renders messages, tool calls in one line, and a conversation without messages', () => {
    const r = record('t', { continues: 'conv-000000000009' });
    const text = transcript(r, [
      message(r.id, { role: 1, body: 'Do it', tokens: 0 }),
      message(r.id, {
        body: '',
        tokens: 12,
        tool_calls: [
          toolCall({ input: { content: 'a\nb', file_path: 'x.ts', flags: { force: true } } }),
          toolCall({ name: 'Bash', status: 'pending', input: { command: 'sleep 100' } }),
        ],
      }),
    ]);
    expect(text).toContain('  continues conv-000000000009');
    expect(text).toContain('assistant (12 tokens)');
    expect(text).toContain('→ Write file_path=x.ts content=a b flags={"force":true} [✓ success]');
    expect(text).toContain('→ Bash command=sleep 100 [… pending]');
    expect(transcript(record('t', { session_id: '', ended_at: null }), [])).toContain('(no messages recorded)');
    expect(toolInputLine({ command: 'y'.repeat(300) }).length).toBeLessThanOrEqual(100);
  });

  it('HOOK.md: tokens per step and the last messages of the active agent step', () => {
    const task = {
      id: 'task-20260101-000000',
      steps: [
        { name: 'implement', type: 'ai', prompt: 'x', max_attempts: 3, on_failure: 'fail' },
        { name: 'check', type: 'command', run: ['true'], max_attempts: 1, on_failure: 'fail' },
      ],
      template: 'x',
      description: 'd',
      worktree: '/w',
      branch: 'b',
    } as unknown as Task;
    const r = record(task.id, { stats: partialStats(), status: 'interrupted' });
    writeConversation(dir, r, [message(r.id, { role: 1, body: 'Implement ```code```' }), message(r.id, { body: 'x'.repeat(700) })]);
    const hook = {
      ...newHook(task.id, 'ws', '2026-01-01T00:00:00Z'),
      state: 'recovering' as const,
      current_step: { step_name: 'implement', step_index: 0, started_at: '2026-01-01T00:00:00Z', attempt: 1, max_attempts: 3 },
    };
    const view = conversationView(dir, hook, task)!;
    expect(view.last?.messages).toHaveLength(2);
    const md = renderHookMarkdown({ hook, task, now: new Date('2026-01-01T00:01:00Z'), conversations: view });
    expect(md).toContain('| 1 | implement | ai | **recovering** | 100 in / ? out (partial) | ? |');
    expect(md).toContain('| 2 | check | command | pending | — | — |');
    expect(md).toContain("Implement '''code'''");
    expect(md).toContain(`${'x'.repeat(600)}…`);
    // no conversations: no view; ended or non-agent steps: no last messages
    expect(conversationView(join(dir, 'none'), hook, task)).toBeUndefined();
    expect(conversationView(dir, { ...hook, state: 'completed' }, task)!.last).toBeUndefined();
    const noMessages = record(task.id, { started_at: '2026-01-10T11:00:00Z' });
    writeConversation(dir, noMessages);
    const empty = renderHookMarkdown({ hook, task, now: new Date(), conversations: conversationView(dir, hook, task)! });
    expect(empty).toContain('The latest 0 messages');
    expect(empty).toContain('(no messages recorded yet)');
  });
});

// The reading side of conversations through the built CLI: `atlas usage`, `atlas conversation`,
// `atlas hook status` and HOOK.md, over conversation files written in the documented format.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendRaw, message, partialStats, record, stats, toolCall, writeConversation } from './helpers/conversation-fixtures.js';
import type { FixtureTask } from './helpers/core-fixtures.js';
import { atlas, createFixtureTask, makeGitRepo, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';

let home: string;
let repo: string;
let first: FixtureTask;
let second: FixtureTask;
const ids: Record<string, string> = {};

beforeAll(async () => {
  ensureBuilt();
  home = tempDir('atlas-conv-home-');
  repo = makeGitRepo();
  first = await createFixtureTask({ home, repo, now: new Date('2026-01-10T09:00:00Z') });
  second = await createFixtureTask({ home, repo, workspace: 'other', now: new Date('2026-01-12T09:00:00Z') });
  // Task 1: analyze (complete, two models), implement cut off (partial), then resumed (complete).
  const analyze = record(first.task.id, {
    step_name: 'analyze',
    started_at: '2026-01-10T09:00:05Z',
    stats: stats({
      total_input_tokens: 300,
      total_output_tokens: 50,
      cache_read_tokens: 1000,
      cache_creation_tokens: 200,
      cost_usd: 0.5,
      models: [
        {
          model: 'claude-sonnet-test',
          input_tokens: 250,
          output_tokens: 40,
          cache_read_tokens: 1000,
          cache_creation_tokens: 200,
          cost_usd: 0.45,
        },
        { model: 'claude-haiku-test', input_tokens: 50, output_tokens: 10, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: 0.05 },
      ],
    }),
  });
  ids['analyze'] = analyze.id;
  writeConversation(first.ref.dir, analyze, [
    message(analyze.id, { role: 1, body: 'Analyze the null pointer' }),
    message(analyze.id, { body: 'It is in parseConfig.' }),
  ]);
  const cut = record(first.task.id, {
    started_at: '2026-01-10T09:05:00Z',
    status: 'interrupted',
    ended_at: null,
    stats: partialStats({ total_input_tokens: 80, cache_read_tokens: 10 }),
  });
  ids['cut'] = cut.id;
  writeConversation(first.ref.dir, cut, [
    message(cut.id, { role: 1, body: 'Implement the fix' }),
    message(cut.id, {
      body: 'Writing the fix now.',
      tool_calls: [
        toolCall(),
        toolCall({
          id: 'toolu_2',
          name: 'Bash',
          input: { command: 'npm test', description: 'run the tests' },
          status: 'error',
          error: 'permission denied',
        }),
      ],
    }),
  ]);
  // a hand-damaged line, then the line a kill cut in flight (no newline yet)
  appendRaw(first.ref.dir, cut.id, 'garbage\n{"key":"torn","conversation_id"');
  const resumed = record(first.task.id, {
    attempt: 2,
    started_at: '2026-01-10T10:00:00Z',
    continues: cut.id,
    stats: stats({ total_input_tokens: 120, total_output_tokens: 30, cost_usd: 0.02 }),
  });
  ids['resumed'] = resumed.id;
  writeConversation(first.ref.dir, resumed, [message(resumed.id, { role: 1, body: 'Continue' }), message(resumed.id, { body: 'Done.' })]);
  // Task 2: one run with no model name.
  writeConversation(
    second.ref.dir,
    record(second.task.id, {
      model: '',
      started_at: '2026-01-12T09:01:00Z',
      stats: stats({ total_input_tokens: 10, total_output_tokens: 5, cost_usd: 0.001 }),
    }),
  );
});
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(repo, { recursive: true, force: true });
});

const run = (args: string[]) => atlas(args, { env: { ATLAS_HOME: home }, cwd: repo });

describe('atlas usage', () => {
  it('totals every conversation once, marks partial rows and never adds unknown output or cost as 0', async () => {
    const result = await run(['usage', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.by).toBe('task');
    expect(report.total).toEqual({
      conversations: 4,
      partial: 1,
      lost_in_flight: 0,
      input_tokens: 510,
      cache_read_tokens: 1010,
      cache_creation_tokens: 200,
      output_tokens: 85,
      output_tokens_complete: false,
      cost_usd: 0.521,
      cost_complete: false,
    });
    expect(report.rows.map((r: any) => [r.task, r.conversations, r.partial])).toEqual([
      [first.task.id, 3, 1],
      [second.task.id, 1, 0],
    ]);
    expect(report.rows[1]).toMatchObject({ output_tokens: 5, output_tokens_complete: true, cost_complete: true });

    const text = await run(['usage']);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(/^TASK\s+RUNS\s+INPUT\s+CACHE READ\s+CACHE WRITE\s+OUTPUT\s+COST$/);
    expect(lines[1]).toMatch(new RegExp(`^${first.task.id}\\s+3\\s+1 partial\\s+500\\s+1,010\\s+200\\s+≥80\\s+≥\\$0\\.52$`));
    expect(lines[3]).toMatch(/^TOTAL\s+4\s+1 partial\s+510\s+1,010\s+200\s+≥85\s+≥\$0\.52$/);
    expect(text.stdout).toContain('?: unknown (never counted as 0)');
  });

  it('groups by step, model, day and template; filters by task and date', async () => {
    const byStep = JSON.parse((await run(['usage', '--by', 'step', '--json'])).stdout);
    expect(byStep.rows.map((r: any) => [r.step, r.conversations, r.input_tokens])).toEqual([
      ['analyze', 1, 300],
      ['implement', 3, 210],
    ]);
    const byModel = JSON.parse((await run(['usage', '--by', 'model', '--json'])).stdout);
    expect(byModel.rows.map((r: any) => [r.model, r.input_tokens, r.output_tokens])).toEqual([
      ['(unknown)', 10, 5],
      ['claude-haiku-test', 50, 10],
      ['claude-sonnet-test', 450, 70],
    ]);
    expect(byModel.total.conversations).toBe(4);
    const byDay = JSON.parse((await run(['usage', '--by', 'day', '--json'])).stdout);
    expect(byDay.rows.map((r: any) => r.day)).toEqual(['2026-01-10', '2026-01-12']);
    const byTemplate = JSON.parse((await run(['usage', '--by', 'template', '--json'])).stdout);
    expect(byTemplate.rows.map((r: any) => [r.template, r.conversations])).toEqual([['bugfix', 4]]);

    const one = JSON.parse((await run(['usage', '--task', second.task.id, '--json'])).stdout);
    expect(one.total.conversations).toBe(1);
    const since = JSON.parse((await run(['usage', '--since', '2026-01-10T09:30:00Z', '--json'])).stdout);
    expect(since.total.conversations).toBe(2);
    expect(since.since).toBe('2026-01-10T09:30:00Z');
    const onlyCut = JSON.parse((await run(['usage', '--since', '2026-01-10', '--task', first.task.id, '--by', 'step', '--json'])).stdout);
    expect(onlyCut.rows[0].step).toBe('analyze');
    const none = await run(['usage', '--since', '2030-01-01']);
    expect(none.stdout.trim()).toBe('no agent conversations since 2030-01-01T00:00:00Z');
  });

  it('refuses a bad date, an unknown task and an unknown grouping', async () => {
    expect((await run(['usage', '--since', 'yesterday'])).code).toBe(2);
    const missing = await run(['usage', '--task', 'task-20200101-000000']);
    expect(missing.code).toBe(4);
    expect((await run(['usage', '--by', 'color'])).code).toBe(2);
  });
});

describe('atlas conversation', () => {
  it('prints the transcript: prompts, answers, each tool call with a one-line input and status', async () => {
    const result = await run(['conversation', first.task.id, '--step', 'implement']);
    expect(result.code).toBe(0);
    // a damaged line is skipped with a warning (the torn last one silently), never a crash
    expect(result.stderr).toContain(`${ids['cut']}/messages.jsonl: 1 line not a valid message; skipped`);
    const out = result.stdout;
    expect(out).toContain(`conversation ${ids['cut']} · step implement, attempt 1 · claude (claude-sonnet-test) · interrupted (partial)`);
    expect(out).toContain('  tokens 80 in (+10 cache) / ? out · ? · 1 run, 1 partial');
    expect(out).toContain('    Implement the fix');
    expect(out).toContain('→ Write file_path=src/a.ts content=x [✓ success]');
    expect(out).toContain('→ Bash command=npm test description=run the tests [✗ error: permission denied]');
    expect(out).toContain(`  continues ${ids['cut']}`);
    expect(out).not.toContain('Analyze the null pointer');

    const second = await run(['conversation', first.task.id, '--step', 'implement', '--attempt', '2', '--json']);
    const data = JSON.parse(second.stdout);
    expect(data.conversations).toHaveLength(1);
    expect(data.conversations[0]).toMatchObject({ id: ids['resumed'], continues: ids['cut'], attempt: 2 });
    expect(data.conversations[0].messages.map((m: any) => m.body)).toEqual(['Continue', 'Done.']);
  });

  it('says what exists when nothing matches, and refuses a bad attempt', async () => {
    const none = await run(['conversation', first.task.id, '--step', 'validate']);
    expect(none.code).toBe(4);
    expect(none.stderr).toContain('has no agent conversation for step validate');
    expect(none.stderr).toContain('its conversations belong to: analyze, implement');
    expect((await run(['conversation', first.task.id, '--attempt', 'two'])).code).toBe(2);
  });

  it('skips a corrupt conversation.json with a warning', async () => {
    const bad = record(second.task.id, { started_at: '2026-01-12T09:02:00Z' });
    const dir = writeConversation(second.ref.dir, bad);
    writeFileSync(join(dir, 'conversation.json'), '{"id": "conv-');
    const other = record(second.task.id, { started_at: '2026-01-12T09:03:00Z', status: 'exploded' as any });
    writeConversation(second.ref.dir, other);
    const result = await run(['usage', '--task', second.task.id, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).total.conversations).toBe(1);
    expect(result.stderr).toContain(`${bad.id}/conversation.json: not valid JSON`);
    expect(result.stderr).toContain(`${other.id}/conversation.json: status is not one of running, completed, failed, interrupted; skipped`);
  });
});

describe('hook status and HOOK.md', () => {
  it("show the task's tokens and cost, per step in HOOK.md, and the last messages of an active agent step", async () => {
    await first.manager.transition({ to: 'step_pending', trigger: 'setup_complete' });
    await first.manager.transition(
      { to: 'step_running', trigger: 'step_start', stepName: 'implement', details: { step_index: 1 } },
      (hook) => ({
        ...hook,
        current_step: { step_name: 'implement', step_index: 1, started_at: '2026-01-10T10:00:00Z', attempt: 2, max_attempts: 3 },
      }),
    );
    const status = await run(['hook', 'status', '--task', first.task.id]);
    expect(status.stdout).toContain('  tokens       500 in (+1,210 cache) / ≥80 out · ≥$0.52 · 3 runs, 1 partial');
    const json = JSON.parse((await run(['hook', 'status', '--task', first.task.id, '--json'])).stdout);
    expect(json.usage).toMatchObject({ conversations: 3, partial: 1, input_tokens: 500, output_tokens: 80, output_tokens_complete: false });

    const md = readFileSync(first.manager.files.hookMarkdown, 'utf8');
    expect(md).toContain('| # | Step | Type | Status | Tokens | Cost |');
    expect(md).toContain('| 1 | analyze | ai | pending | 300 in (+1,200 cache) / 50 out | $0.50 |');
    expect(md).toContain('| 2 | implement | ai | **step_running** | 200 in (+10 cache) / ≥30 out (partial) | ≥$0.02 |');
    expect(md).toContain('| 3 | validate | validation | pending | — | — |');
    expect(md).toContain(
      `## Last agent messages\n\nThe latest 2 messages of conversation \`${ids['resumed']}\` (step implement, attempt 2, completed)`,
    );
    expect(md).toContain('    Continue');
  });
});

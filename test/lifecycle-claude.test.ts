// Lifecycle hooks around the real Claude Code CLI (against the fake Messages API on 127.0.0.1):
// a failing OnColdStart stops the step before Claude Code makes a single request and leaves the
// task recoverable; fixed, `atlas recover` runs the agent and the task completes; hooks receive
// valid JSON; lifecycle.log keeps the order OnMessage → OnStreamFinish → OnTerminate.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, git, onlyTask, sandbox, transitions } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import type { HookRecorder } from './helpers/lifecycle-fixtures.js';
import { hookRecorder, lifecycleLog } from './helpers/lifecycle-fixtures.js';

const SCRIPT = [
  {
    text: 'I will write the notes.',
    toolUses: [{ id: 'toolu_w1', name: 'Write', input: { file_path: 'NOTES.md', content: 'notes\n' } }],
    usage: { input_tokens: 100, output_tokens: 20 },
  },
  { text: 'Wrote NOTES.md.', usage: { input_tokens: 150, output_tokens: 10 } },
];

function template(extra: string): string {
  return `name: notes
steps:
  - name: write
    type: ai
    max_attempts: 1
    prompt: "Write NOTES.md for: {{description}}"
lifecycle:
${extra}`;
}

let sb: Sandbox | undefined;
let fake: FakeAnthropic | undefined;
beforeAll(() => ensureBuilt());
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  sb?.cleanup();
});

/** A sandbox whose `notes` template has the lifecycle section `lifecycle(recorder)`. */
function setup(lifecycle: (recorder: HookRecorder) => string): { sb: Sandbox; env: NodeJS.ProcessEnv; recorder: HookRecorder } {
  const made = sandbox();
  sb = made;
  const recorder = hookRecorder(made.base);
  mkdirSync(join(made.repo, '.atlas', 'templates'), { recursive: true });
  writeFileSync(join(made.repo, '.atlas', 'templates', 'notes.yaml'), template(lifecycle(recorder)));
  git(made.repo, 'add', '-A');
  git(made.repo, 'commit', '-q', '-m', 'template');
  return { sb: made, env: claudeEnv(fake!, made.env), recorder };
}

/**
 * lifecycle.log proves the order: per source (builtins; user commands), every OnMessage before
 * OnStreamFinish before OnTerminate.
 */
function assertOrder(entries: any[]): void {
  // atlas has no OnTerminate builtin by default; the user's commands have all three points.
  assertPointOrder(
    entries.filter((e) => e.source === 'builtin').map((e) => e.point),
    ['on_message', 'on_stream_finish'],
  );
  assertPointOrder(
    entries.filter((e) => e.source !== 'builtin').map((e) => e.point),
    ['on_message', 'on_stream_finish', 'on_terminate'],
  );
}

/** Every point present, and each one's runs all before the next one's first. */
function assertPointOrder(points: string[], order: string[]): void {
  for (const p of order) expect(points, p).toContain(p);
  for (let i = 1; i < order.length; i++) expect(points.lastIndexOf(order[i - 1]!)).toBeLessThan(points.indexOf(order[i]!));
}

describe('lifecycle hooks with the real Claude Code', () => {
  it('a failing OnColdStart stops the step before Claude Code starts; fixed, recover completes the task', async () => {
    fake = await startFakeAnthropic(SCRIPT);
    const { sb, env, recorder } = setup(
      (r) => `  on_cold_start: ${JSON.stringify(r.command('cold'))}\n  on_terminate: ${JSON.stringify(r.command('term'))}\n`,
    );
    writeFileSync(recorder.failMarker, '');

    const failed = await atlas(sb, ['start', 'notes', 'the project'], { env });
    expect(failed.code).toBe(5);
    expect(failed.stdout).toContain(
      `OnColdStart hook "${recorder.command('cold')}" (template) failed: exit code 3; stderr: hook says: the store is unreachable`,
    );
    expect(fake.served()).toBe(0);
    const { task, dir } = onlyTask(sb);
    expect(onlyTask(sb).hook.state).toBe('awaiting_human');

    rmSync(recorder.failMarker);
    const recovered = await atlas(sb, ['recover', '--task', task.id, '--yes'], { env });
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(readFileSync(join(task.worktree, 'NOTES.md'), 'utf8')).toBe('notes\n');
    expect(fake.served()).toBe(2);
    const after = onlyTask(sb).hook;
    expect(after.state).toBe('completed');
    expect(transitions(after)).toContain('step_running → awaiting_human (cold_start_failed)');
    // Each hook got the event as valid JSON (the recorder parsed it).
    const runs = recorder.runs();
    expect(runs.map((r) => `${r.label}:${r.event.point}:${r.event.reason}`)).toEqual([
      'cold:on_cold_start:new_workspace',
      'cold:on_cold_start:resumed',
      'term:on_terminate:completed',
    ]);
    expect(runs[1]!.event).toMatchObject({ task_id: task.id, step_name: 'write', workspace: task.worktree, task_dir: dir });
    const points = lifecycleLog(dir).map((e) => `${e.point}:${e.outcome}`);
    expect(points[0]).toBe('on_cold_start:failed');
    expect(points[1]).toBe('on_cold_start:ok');
    expect(points.at(-1)).toBe('on_terminate:ok');
  });

  describe('points the ai step emits', () => {
    it('OnMessage → OnStreamFinish → OnTerminate, each hook with valid JSON; a failing OnStreamFinish does not fail the task', async () => {
      fake = await startFakeAnthropic(SCRIPT);
      const { sb, env, recorder } = setup(() => '');
      const result = await atlas(
        sb,
        [
          'start',
          'notes',
          'the project',
          '-c',
          `lifecycle.on_message=${recorder.command('msg')}`,
          '-c',
          `lifecycle.on_stream_finish=["${recorder.command('finish')}", "exit 4"]`,
          '-c',
          `lifecycle.on_terminate=${recorder.command('term')}`,
        ],
        { env },
      );
      expect(result.code, result.stderr).toBe(0);
      const { dir, hook, task } = onlyTask(sb);
      expect(hook.state).toBe('completed');
      expect(result.stdout).toContain('OnStreamFinish hook "exit 4" (config) failed: exit code 4');
      const runs = recorder.runs();
      const finish = runs.find((r) => r.label === 'finish')!;
      expect(finish.event).toMatchObject({ point: 'on_stream_finish', ok: true, task_id: task.id, step_name: 'write' });
      expect(finish.event.usage).toMatchObject({ input_tokens: 250, output_tokens: 30, partial: false });
      expect(
        runs
          .filter((r) => r.label === 'msg')
          .every((r) => typeof r.event.message.body === 'string' && r.event.conversation_id === finish.event.conversation_id),
      ).toBe(true);
      // The rows OnMessage receives, as docs/lifecycle-hooks.md says: the prompt, the assistant
      // message with its Write still pending, then the result as its own role 3 message.
      const messages = runs.filter((r) => r.label === 'msg').map((r) => r.event.message);
      const write = messages.find((m) => m.role === 2 && m.tool_calls.some((c: any) => c.name === 'Write'))!;
      expect(messages[0]).toMatchObject({ key: 'prompt', role: 1 });
      expect(write.tool_calls[0]).toMatchObject({ type: 'tool_use', status: 'pending' });
      expect(messages.find((m) => m.key === `tool-${write.tool_calls[0].id}`)).toMatchObject({
        role: 3,
        tool_calls: [{ type: 'tool_result', status: 'success' }],
      });
      assertOrder(lifecycleLog(dir));
      expect(lifecycleLog(dir).find((e) => e.hook === 'exit 4')).toMatchObject({ outcome: 'failed', exit_code: 4 });

      // The reading side over what the real run recorded: the ledger equals the scripted usage.
      const usage = await atlas(sb, ['usage', '--task', task.id, '--json'], { env });
      expect(JSON.parse(usage.stdout).total).toMatchObject({
        conversations: 1,
        partial: 0,
        input_tokens: 250,
        output_tokens: 30,
        output_tokens_complete: true,
      });
      const transcript = await atlas(sb, ['conversation', task.id], { env });
      expect(transcript.code).toBe(0);
      expect(transcript.stdout).toContain('Write NOTES.md for: the project');
      expect(transcript.stdout).toMatch(/→ Write file_path=\S*NOTES\.md content=notes \[✓ success\]/);
      expect(transcript.stdout).toContain('Wrote NOTES.md.');
    });
  });
});

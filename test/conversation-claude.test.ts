// Conversations with the REAL Claude Code CLI against the fake Messages API, through the built
// atlas CLI: files on disk, ledger totals equal to the agent's own result, tool calls joined with
// their outputs, permission denials recorded and shown, and a SIGKILL mid-stream recovered.
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationRecord, Message } from '../src/domain/conversation.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, finished, onlyTask, ROOT, sandbox, startAtlas, waitFor } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

const TEMPLATE = `name: fix
steps:
  - name: implement
    type: ai
    max_attempts: 1
    prompt: "Fix: {{description}}"
  - name: validate
    type: validation
    commands: ["echo validated"]
`;

let sb: Sandbox | undefined;
let fake: FakeAnthropic | undefined;
beforeAll(() => ensureBuilt());
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  sb?.cleanup();
  sb = undefined;
});

function conversations(taskDir: string): Array<{ record: ConversationRecord; messages: Message[]; raw: string }> {
  const dir = join(taskDir, 'conversations');
  return readdirSync(dir)
    .map((id) => {
      const raw = readFileSync(join(dir, id, 'messages.jsonl'), 'utf8');
      return {
        record: JSON.parse(readFileSync(join(dir, id, 'conversation.json'), 'utf8')) as ConversationRecord,
        messages: raw
          .split('\n')
          .filter((l) => l.length > 0)
          .map((l) => JSON.parse(l) as Message),
        raw,
      };
    })
    .sort((a, b) => a.record.started_at.localeCompare(b.record.started_at));
}

/** `atlas` on the agent's PATH (the fixture's bin folder) is this build. */
function putAtlasOnPath(sb: Sandbox): void {
  const file = join(sb.bin, 'atlas');
  writeFileSync(file, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'atlas.cjs')}" "$@"\n`);
  chmodSync(file, 0o755);
}

describe('conversations with the real Claude Code', () => {
  it('records the prompt, messages with joined tool calls, the exact ledger and a permission denial', async () => {
    fake = await startFakeAnthropic([
      {
        text: 'I will write the fix.',
        toolUses: [
          { id: 'toolu_write', name: 'Write', input: { file_path: 'fix.txt', content: 'fixed\n' } },
          { id: 'toolu_valid', name: 'Bash', input: { command: 'echo validated' } },
          { id: 'toolu_denied', name: 'Bash', input: { command: 'curl http://example.invalid' } },
        ],
        usage: { input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 11, cache_creation_input_tokens: 5 },
      },
      { text: 'Fixed it.', usage: { input_tokens: 200, output_tokens: 12, cache_read_input_tokens: 4 } },
    ]);
    sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    const run = await atlas(sb, ['start', 'fix', 'the crash'], { env: claudeEnv(fake, sb.env) });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const { dir, hook, task } = onlyTask(sb);

    const [conv, ...others] = conversations(dir);
    expect(others).toHaveLength(0);
    const { record, messages } = conv!;
    expect(record).toMatchObject({
      task_id: task.id,
      step_name: 'implement',
      attempt: 1,
      agent: 'claude',
      status: 'completed',
      continues: null,
    });
    expect(record.session_id).toBe(hook.history.find((e: any) => e.trigger === 'step_complete').details.session_id);
    // The ledger is the agent's own result: the sums of the scripted usage, exactly.
    expect(record.stats).toMatchObject({
      total_input_tokens: 320,
      total_output_tokens: 42,
      cache_read_tokens: 15,
      cache_creation_tokens: 5,
      total_cache_tokens: 20,
      partial: false,
      messages_exchanged: messages.length,
    });
    expect(record.stats.cost_usd).toBeGreaterThan(0);
    expect(record.stats.models).toHaveLength(1);
    expect(record.stats.models[0]).toMatchObject({ input_tokens: 320, output_tokens: 42, cache_read_tokens: 15, cache_creation_tokens: 5 });

    expect(messages.map((m) => m.role)).toEqual([1, 2, 2]);
    expect(messages[0]).toMatchObject({ key: 'prompt', body: 'Fix: the crash', conversation_id: record.id });
    const first = messages[1]!;
    expect(first.body).toBe('I will write the fix.');
    expect(first.tokens).toBe(120 + 11 + 5);
    const calls = Object.fromEntries(first.tool_calls.map((c) => [c.id, c]));
    expect(calls['toolu_write']).toMatchObject({ name: 'Write', status: 'success', input: { file_path: 'fix.txt' } });
    expect(calls['toolu_write']!.output).toContain('fix.txt');
    // Allowed by default: the task's validation command.
    expect(calls['toolu_valid']).toMatchObject({ name: 'Bash', status: 'success', output: 'validated' });
    expect(calls['toolu_denied']).toMatchObject({ name: 'Bash', status: 'error' });
    expect(messages[2]).toMatchObject({ role: 2, body: 'Fixed it.', tool_calls: [] });

    // The denial: in the conversation, in the hook, on screen.
    expect(record.permission_denials).toEqual([
      { tool_name: 'Bash', tool_use_id: 'toolu_denied', tool_input: { command: 'curl http://example.invalid' } },
    ]);
    const complete = hook.history.find((e: any) => e.trigger === 'step_complete' && e.step_name === 'implement');
    expect(complete.details.permission_denials).toEqual([
      { tool: 'Bash', call: 'Bash(curl http://example.invalid)', tool_use_id: 'toolu_denied' },
    ]);
    expect(complete.details.conversations).toEqual([record.id]);
    expect(run.stdout).toContain('warning: the agent was refused 1 tool call: Bash(curl http://example.invalid)');
    expect(run.stdout).toMatch(/implement.*340 in \/ 42 out tokens, \$\d/);
    expect(run.stdout).toContain('⚠ 1 tool call(s) refused');
    // files the agent wrote reached the hook
    const checkpoint = hook.checkpoints.find((c: any) => c.step_name === 'implement');
    expect(checkpoint.files_snapshot.map((f: any) => f.path)).toContain('fix.txt');
  }, 90_000);

  it('fails the step once, with the fix, when denials are configured to fail it', async () => {
    fake = await startFakeAnthropic([
      { toolUses: [{ id: 'toolu_x', name: 'Bash', input: { command: 'make deploy' } }] },
      { text: 'Could not deploy.' },
    ]);
    sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE.replace('max_attempts: 1', 'max_attempts: 3') });
    const run = await atlas(sb, ['start', 'fix', 'deploy it', '-c', 'ai.on_permission_denial=fail'], { env: claudeEnv(fake, sb.env) });
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('ai.allowed_tools');
    // The 300-character hint is said once, not in a warning, the error and the hint (issue 35).
    expect((run.stdout + run.stderr).split('see docs/conversations.md, "Permission denials"').length - 1).toBe(1);
    const { hook, dir } = onlyTask(sb);
    expect(hook.history.filter((e: any) => e.trigger === 'step_start')).toHaveLength(1);
    const failed = hook.history.find((e: any) => e.trigger === 'step_failed');
    expect(failed.details.permission_denials[0].call).toBe('Bash(make deploy)');
    // the failed attempt's tokens are kept
    expect(failed.details.tokens).toMatchObject({ input: 20, output: 10, partial: false });
    expect(conversations(dir)[0]!.record.status).toBe('completed');
  }, 90_000);

  it('a SIGKILL mid-stream leaves a readable partial conversation; recover continues the session and counts each run once', async () => {
    fake = await startFakeAnthropic([
      {
        text: 'Writing.',
        toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: 'half.txt', content: 'half\n' } }],
        usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 3 },
      },
      { text: 'Now thinking very hard', hang: true, usage: { input_tokens: 140, output_tokens: 99, cache_creation_input_tokens: 6 } },
      { text: 'Finished after the crash.', usage: { input_tokens: 300, output_tokens: 15, cache_read_input_tokens: 40 } },
    ]);
    sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE.replace('max_attempts: 1', 'max_attempts: 2') });
    const env = claudeEnv(fake, sb.env);
    const child = startAtlas(sb, ['start', 'fix', 'kill me'], { env });
    const done = finished(child);
    await waitFor(() => fake!.served() >= 2, 60_000, 'the hanging turn');
    const convDir = () => join(onlyTask(sb!).dir, 'conversations');
    // the first assistant message (with its tool result) is on disk before the kill
    await waitFor(
      () => {
        try {
          return readdirSync(convDir()).some((id) => readFileSync(join(convDir(), id, 'messages.jsonl'), 'utf8').includes('toolu_w'));
        } catch {
          return false;
        }
      },
      20_000,
      'the first assistant message',
    );
    // What the assertions below read is stored before the kill: the tool's result in messages.jsonl,
    // and the hanging call's input side (100 + 140 tokens) in the record.
    const cutSoFar = () => {
      try {
        return conversations(onlyTask(sb!).dir)[0];
      } catch {
        return undefined;
      }
    };
    await waitFor(
      () => cutSoFar()?.messages[1]?.tool_calls[0]?.status === 'success' && (cutSoFar()?.record.stats?.total_input_tokens ?? 0) >= 240,
      20_000,
      'the tool result and the hanging call recorded',
    );
    child.kill('SIGKILL');
    await done;

    const [cut] = conversations(onlyTask(sb).dir);
    expect(cut!.record.status).toBe('running');
    expect(cut!.raw.endsWith('\n')).toBe(true);
    expect(cut!.messages[1]!.tool_calls[0]).toMatchObject({ id: 'toolu_w', status: 'success' });

    const recovered = await atlas(sb, ['recover', '--task', onlyTask(sb).id, '--action', 'retry_step'], { env });
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    expect(recovered.stdout).toContain('closed as interrupted with a partial token row');
    const [first, second, ...rest] = conversations(onlyTask(sb).dir);
    expect(rest).toHaveLength(0);
    // The cut-off run: interrupted, partial; input and cache from its two API calls, each once;
    // output tokens the transcript's for the call that was answered (issue 22); cost unknown.
    expect(first!.record).toMatchObject({ status: 'interrupted', attempt: 1 });
    expect(first!.record.stats).toMatchObject({
      partial: true,
      total_input_tokens: 240,
      cache_read_tokens: 3,
      cache_creation_tokens: 6,
      total_output_tokens: 20,
      cost_usd: null,
    });
    // The resumed run: its own row, naming the one it continues, with the agent's result totals.
    expect(second!.record).toMatchObject({
      status: 'completed',
      attempt: 2,
      continues: first!.record.id,
      session_id: first!.record.session_id,
    });
    expect(second!.record.stats).toMatchObject({
      partial: false,
      total_input_tokens: 300,
      total_output_tokens: 15,
      cache_read_tokens: 40,
      cache_creation_tokens: 0,
    });
    expect(second!.messages[0]!.role).toBe(1);
    expect(second!.messages.at(-1)!.body).toBe('Finished after the crash.');
    expect(onlyTask(sb).hook.state).toBe('completed');
  }, 120_000);

  it("Ctrl+C mid-stream closes the conversation as interrupted and keeps the attempt's tokens in the hook", async () => {
    fake = await startFakeAnthropic([
      { text: 'Working on it', hang: true, usage: { input_tokens: 77, output_tokens: 5, cache_read_input_tokens: 9 } },
    ]);
    sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    const child = startAtlas(sb, ['start', 'fix', 'stop me'], { env: claudeEnv(fake, sb.env) });
    const done = finished(child);
    await waitFor(
      () => {
        try {
          const dir = join(onlyTask(sb!).dir, 'conversations');
          return readdirSync(dir).some(
            (id) => JSON.parse(readFileSync(join(dir, id, 'conversation.json'), 'utf8')).stats.total_input_tokens === 77,
          );
        } catch {
          return false;
        }
      },
      60_000,
      'the first API call in the ledger',
    );
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).not.toBe(0);
    const { hook, dir } = onlyTask(sb);
    const [conv] = conversations(dir);
    expect(conv!.record.status).toBe('interrupted');
    expect(conv!.record.stats).toMatchObject({
      partial: true,
      total_input_tokens: 77,
      cache_read_tokens: 9,
      total_output_tokens: null,
      cost_usd: null,
    });
    const interrupted = hook.history.find((e: any) => e.trigger === 'interrupted');
    expect(interrupted.details).toMatchObject({
      signal: 'SIGINT',
      conversations: [conv!.record.id],
      tokens: { input: 77, output: null, partial: true },
    });
  }, 90_000);

  it("the agent's Bash finds atlas on the PATH it was given when Claude Code cannot snapshot the shell", async () => {
    // A busy machine makes Claude Code's 10 s shell snapshot fail: it then runs each command in a
    // login shell, whose profile resets PATH. This bash fails the snapshot at once.
    fake = await startFakeAnthropic([
      { text: 'Checkpointing.', toolUses: [{ id: 'toolu_ckpt', name: 'Bash', input: { command: 'atlas checkpoint "no snapshot"' } }] },
      { text: 'Done.' },
    ]);
    sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    putAtlasOnPath(sb);
    const shell = join(sb.base, 'shell', 'bash');
    mkdirSync(dirname(shell));
    writeFileSync(shell, '#!/bin/bash\ncase "$*" in *SNAPSHOT_FILE=*) exit 1;; esac\nexec /bin/bash "$@"\n');
    chmodSync(shell, 0o755);
    const run = await atlas(sb, ['start', 'fix', 'checkpoint without a snapshot'], {
      env: { ...claudeEnv(fake, sb.env), CLAUDE_CODE_SHELL: shell },
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const { hook, dir } = onlyTask(sb);
    const [conv] = conversations(dir);
    const call = conv!.messages[1]!.tool_calls.find((c) => c.id === 'toolu_ckpt');
    expect(call!.status, JSON.stringify(call)).toBe('success');
    expect(hook.checkpoints.map((c: any) => c.description)).toContain('no snapshot');
  }, 120_000);

  it('the built-in bugfix template runs its tests and checkpoints under acceptEdits, refused nothing', async () => {
    fake = await startFakeAnthropic([
      { text: 'The cause is in index.js.' },
      {
        text: 'Fixing, testing, checkpointing.',
        toolUses: [
          { id: 'toolu_fix', name: 'Write', input: { file_path: 'index.js', content: 'module.exports = 2;\n' } },
          { id: 'toolu_test', name: 'Bash', input: { command: 'npm test' } },
          { id: 'toolu_ckpt', name: 'Bash', input: { command: 'atlas checkpoint "fixed index.js"' } },
        ],
      },
      { text: 'Fixed.' },
    ]);
    sb = sandbox({
      'package.json': JSON.stringify({ name: 'fixture', scripts: { test: 'node -e "process.exit(0)"' } }),
      'index.js': 'module.exports = 1;\n',
    });
    putAtlasOnPath(sb);
    const run = await atlas(sb, ['start', 'bugfix', 'index returns 1'], { env: claudeEnv(fake, sb.env) });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).not.toContain('refused');
    const { hook, dir } = onlyTask(sb);
    const [analyze, implement] = conversations(dir);
    expect(analyze!.record.step_name).toBe('analyze');
    expect(implement!.record.permission_denials).toBeUndefined();
    const calls = Object.fromEntries(implement!.messages[1]!.tool_calls.map((c) => [c.id, c]));
    expect(calls['toolu_test']!.status, JSON.stringify(calls['toolu_test'])).toBe('success');
    expect(calls['toolu_ckpt']!.status, JSON.stringify(calls['toolu_ckpt'])).toBe('success');
    expect(hook.checkpoints.map((c: any) => c.description)).toContain('fixed index.js');
  }, 120_000);
});

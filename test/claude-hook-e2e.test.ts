// The Claude Code integration with the real CLI (node_modules/.bin/claude) against the fake
// Messages API: an atlas bugfix task run end to end through `--settings` hooks, a person's
// session (hooks from `atlas claude install`) in an interrupted task's worktree getting the brief
// and feeding the task, and the guard refusing a Read of the master key. Everything runs
// asynchronously: the fake API answers from this process's event loop.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listConversations } from '../src/conversation/read.js';
import { conversationIdFor } from '../src/integrations/claude/ledger.js';
import { ATLAS_BIN, readJsonLines, runAsync, writeDiskTask } from './helpers/claude-hook-fixtures.js';
import { COMMAND_FREE_BUGFIX } from './helpers/claude-task-fixtures.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, onlyTask, sandbox } from './helpers/engine-fixtures.js';
import type { FakeAnthropic, FakeTurn, RecordedRequest } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

let fake: FakeAnthropic | undefined;
let sb: Sandbox | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  sb?.cleanup();
  sb = undefined;
});
beforeAll(() => ensureBuilt(), 180_000);

function lastUserHasToolResult(request: RecordedRequest): boolean {
  const messages = request.body?.messages ?? [];
  const last = messages[messages.length - 1];
  return Array.isArray(last?.content) && last.content.some((c: any) => c.type === 'tool_result');
}

const promptText = (request: RecordedRequest) => JSON.stringify(request.body?.messages ?? []);

/** Each request answered from what it asks: analysis text, a Write in the worktree, then done. */
function bugfixScript(request: RecordedRequest): FakeTurn {
  if (lastUserHasToolResult(request)) return { text: 'Fixed: wrote fixed.txt.', usage: { input_tokens: 40, output_tokens: 8 } };
  const text = promptText(request);
  const worktree = /Fix this bug in the repository at (\S+) \(branch/.exec(text)?.[1];
  if (worktree)
    return {
      text: 'Writing the fix.',
      toolUses: [{ name: 'Write', input: { file_path: join(worktree, 'fixed.txt'), content: 'fixed\n' } }],
      usage: { input_tokens: 30, output_tokens: 6 },
    };
  return { text: 'The cause: the greeting is never written.', usage: { input_tokens: 20, output_tokens: 4 } };
}

const eventNames = (file: string) => readJsonLines(file).map((e) => `${e.hook_event_name}${e.tool_name ? ` ${e.tool_name}` : ''}`);

describe('Claude Code hooks with the real CLI', () => {
  it('records a bugfix task run by atlas: request folders with the real events, files touched, last output', async () => {
    sb = sandbox({ '.atlas/templates/bugfix.yaml': COMMAND_FREE_BUGFIX });
    fake = await startFakeAnthropic(bugfixScript);
    const env = claudeEnv(fake, sb.env);
    const run = await atlas(sb, ['start', 'bugfix', 'greeting is missing', '--no-interactive'], { env });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const task = onlyTask(sb);
    expect(task.hook.state).toBe('completed');
    const requestsDir = join(task.dir, 'requests');
    const requests = readdirSync(requestsDir).filter((d) => existsSync(join(requestsDir, d, '.state.json')));
    expect(requests).toHaveLength(2); // one prompt per ai step
    const states = requests.map((r) => ({
      dir: join(requestsDir, r),
      state: JSON.parse(readFileSync(join(requestsDir, r, '.state.json'), 'utf8')),
    }));
    const implement = states.find((s) => s.state.files_touched.length > 0)!;
    expect(eventNames(join(implement.dir, 'hook-events.jsonl'))).toEqual([
      'UserPromptSubmit',
      'PreToolUse Write',
      'PostToolUse Write',
      'Stop',
      'SessionEnd',
    ]);
    expect(implement.state.files_touched).toEqual([join(task.task.worktree, 'fixed.txt')]);
    expect(implement.state.last_output).toBe('Fixed: wrote fixed.txt.');
    expect(implement.state.usage).toMatchObject({ input_tokens: 70, output_tokens: 14 });
    expect(readFileSync(join(implement.dir, 'context.md'), 'utf8')).toContain('Fix this bug in the repository at');
    expect(existsSync(join(implement.dir, 'session-logs'))).toBe(true);
    const analyze = states.find((s) => s !== implement)!;
    expect(eventNames(join(analyze.dir, 'hook-events.jsonl'))).toEqual(['UserPromptSubmit', 'Stop', 'SessionEnd']);
    // The step's record names the file the Write touched; the stream counted the tokens, the hook did not.
    const checkpoint = task.hook.checkpoints.find((c: any) => c.step_name === 'implement');
    expect(JSON.stringify(checkpoint)).toContain('fixed.txt');
    // One conversation per ai step, recorded from the stream; none added by the hook for the same session.
    const conversations = listConversations(task.dir);
    expect(conversations).toHaveLength(2);
    for (const c of conversations) expect(c.id).not.toBe(conversationIdFor(c.session_id));
    expect(conversations.find((c) => c.step_name === 'implement')!.stats.total_input_tokens).toBe(70);
    expect(readFileSync(join(task.task.worktree, 'fixed.txt'), 'utf8')).toBe('fixed\n');
  }, 90_000);

  it("primes a person's session in an interrupted task's worktree and feeds the task (hooks from atlas claude install)", async () => {
    sb = sandbox();
    const { id, dir: taskDir } = writeDiskTask(sb.home, sb.repo, 'main', { state: 'awaiting_human', trigger: 'interrupted' });
    const regen = await atlas(sb, ['hook', 'regenerate', '--task', id]);
    expect(regen.code, regen.stderr).toBe(0);
    const install = await atlas(sb, ['claude', 'install', '--scope', 'local']);
    expect(install.code, install.stderr).toBe(0);
    fake = await startFakeAnthropic([
      {
        text: 'Continuing.',
        toolUses: [{ name: 'Write', input: { file_path: join(sb.repo, 'parser.ts'), content: 'export const fixed = true;\n' } }],
        usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 50 },
      },
      { text: 'The parser is fixed.', usage: { input_tokens: 120, output_tokens: 12 } },
    ]);
    const env = claudeEnv(fake, sb.env);
    const run = await runAsync(
      'claude',
      ['-p', 'carry on with the task', '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits'],
      { cwd: sb.repo, env },
    );
    expect(run.code, run.stderr).toBe(0);
    const seen = fake.allPromptText();
    expect(seen).toContain(`this working tree belongs to task ${id}`);
    expect(seen).toContain('## What to do now');
    const hook = JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8'));
    expect(hook.current_step.files_touched).toEqual(['parser.ts']);
    expect(hook.current_step.last_output).toBe('The parser is fixed.');
    const sessions = readdirSync(join(taskDir, 'conversations'));
    expect(sessions).toHaveLength(1);
    const conv = JSON.parse(readFileSync(join(taskDir, 'conversations', sessions[0]!, 'conversation.json'), 'utf8'));
    expect(conv.id).toBe(conversationIdFor(conv.session_id));
    expect(conv.stats).toMatchObject({ total_input_tokens: 220, total_output_tokens: 22, cache_read_tokens: 50, partial: true });
    expect(conv.status).toBe('completed');
    // Uninstall puts the (atlas-created) settings file away again.
    await atlas(sb, ['claude', 'uninstall', '--scope', 'local']);
    expect(existsSync(join(sb.repo, '.claude', 'settings.local.json'))).toBe(false);
  }, 90_000);

  it('refuses a scripted Read of the master key and tells the agent why', async () => {
    sb = sandbox();
    const init = await atlas(sb, ['init', '--no-hooks', '--no-interactive']);
    expect(init.code, init.stderr).toBe(0);
    const keyPath = join(sb.home, 'keys', 'master.key');
    const secret = readFileSync(keyPath, 'utf8').trim();
    fake = await startFakeAnthropic([
      { text: 'Reading the key.', toolUses: [{ name: 'Read', input: { file_path: keyPath } }] },
      { text: 'I may not read it.' },
    ]);
    const env = claudeEnv(fake, sb.env);
    const settings = JSON.stringify({
      disableAllHooks: false,
      hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: `'${process.execPath}' '${ATLAS_BIN}' claude-hook` }] }] },
    });
    const run = await runAsync('claude', ['-p', 'show me the key', '--output-format', 'stream-json', '--verbose', '--settings', settings], {
      cwd: sb.repo,
      env,
    });
    expect(run.code, run.stderr).toBe(0);
    const second = fake.messageRequests()[1]!.body;
    const result = second.messages
      .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
      .find((c: any) => c.type === 'tool_result');
    expect(JSON.stringify(result)).toMatch(/atlas guard: Read on .*master\.key is refused.*atlas checkpoint/);
    expect(fake.allPromptText()).not.toContain(secret);
  }, 90_000);
});

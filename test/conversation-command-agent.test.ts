// A command agent's runs are conversations too (prompt and output, no tokens); files it changes
// reach the hook while it runs; a fresh session after a crash gets the brief describing the crash;
// an idempotent step that changed files is flagged; a configuration error fails once.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationRecord, Message } from '../src/domain/conversation.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, finished, onlyTask, sandbox, startAtlas, waitFor } from './helpers/engine-fixtures.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

let sb: Sandbox | undefined;
beforeAll(() => ensureBuilt());
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

function readConversations(taskDir: string): Array<{ record: ConversationRecord; messages: Message[] }> {
  const dir = join(taskDir, 'conversations');
  return readdirSync(dir)
    .map((id) => ({
      record: JSON.parse(readFileSync(join(dir, id, 'conversation.json'), 'utf8')) as ConversationRecord,
      messages: readFileSync(join(dir, id, 'messages.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Message),
    }))
    .sort((a, b) => a.record.started_at.localeCompare(b.record.started_at));
}

/** An agent that writes a file through the shell, then either hangs (AGENT_HANG) or answers. */
function installAgent(s: Sandbox): string {
  const agent = join(s.base, 'agent.js');
  writeFileSync(
    agent,
    `const fs = require('node:fs');
const prompt = fs.readFileSync(0, 'utf8');
fs.writeFileSync('made-by-shell.txt', 'x\\n');
if (process.env.AGENT_HANG) { fs.writeFileSync(process.env.AGENT_HANG, 'started'); setInterval(() => {}, 1000); }
else { fs.writeFileSync(${JSON.stringify(join(s.base, 'prompt-seen.txt'))}, prompt); process.stdout.write('all done\\n'); }
`,
  );
  return `node ${agent}`;
}

describe('conversations of a command agent', () => {
  it('records prompt and output without tokens; after a SIGKILL the fresh session gets the crash brief and files touched were already in the hook', async () => {
    sb = sandbox({
      '.atlas/templates/fix.yaml':
        'name: fix\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 2\n    prompt: "Fix: {{description}}"\n',
    });
    const command = installAgent(sb);
    const marker = join(sb.base, 'hanging');
    const child = startAtlas(sb, ['start', 'fix', 'shell work', '-c', 'ai.agent=command', '-c', `ai.command=${command}`], {
      env: { AGENT_HANG: marker },
    });
    const done = finished(child);
    await waitFor(() => existsSync(marker), 20_000, 'the agent to start');
    // files changed by any means reach files_touched while the step runs
    await waitFor(
      () => {
        try {
          return (onlyTask(sb!).hook.current_step?.files_touched ?? []).includes('made-by-shell.txt');
        } catch {
          return false;
        }
      },
      15_000,
      'files_touched in the hook',
    );
    child.kill('SIGKILL');
    await done;

    const recovered = await atlas(sb, [
      'recover',
      '--task',
      onlyTask(sb).id,
      '--action',
      'retry_step',
      '-c',
      'ai.agent=command',
      '-c',
      `ai.command=${command}`,
    ]);
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    const prompt = readFileSync(join(sb.base, 'prompt-seen.txt'), 'utf8');
    // HOOK.md as it was before the retry started: the diagnosis of the crash
    expect(prompt).toContain('<hook-brief>');
    expect(prompt).toContain('A crash was detected at');

    const [cut, again] = readConversations(onlyTask(sb).dir);
    expect(cut!.record).toMatchObject({ status: 'interrupted', agent: 'command', attempt: 1 });
    expect(cut!.messages.map((m) => m.key)).toEqual(['prompt']);
    expect(again!.record).toMatchObject({ status: 'completed', agent: 'command', attempt: 2, continues: null });
    expect(again!.messages.map((m) => [m.role, m.body.trim()])).toEqual([
      [1, prompt],
      [2, 'all done'],
    ]);
    expect(again!.record.stats).toMatchObject({
      total_input_tokens: 0,
      total_output_tokens: 0,
      cost_usd: null,
      partial: false,
      messages_exchanged: 2,
    });
  }, 60_000);

  it('flags an idempotent step that changed files, in its summary and the hook', async () => {
    sb = sandbox({
      '.atlas/templates/look.yaml':
        'name: look\nsteps:\n  - name: analyze\n    type: ai\n    idempotent: true\n    prompt: "Look at {{description}}"\n',
    });
    const command = installAgent(sb);
    const run = await atlas(sb, ['start', 'look', 'it', '-c', 'ai.agent=command', '-c', `ai.command=${command}`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('⚠ idempotent step changed 1 file(s)');
    expect(run.stdout).toContain('warning: step analyze is idempotent');
    const complete = onlyTask(sb).hook.history.find((e: any) => e.trigger === 'step_complete');
    expect(complete.details.idempotent_changed_files).toEqual(['made-by-shell.txt']);
  }, 60_000);

  it('records stream-json printed by a command agent, tokens included', async () => {
    sb = sandbox({
      '.atlas/templates/fix.yaml': 'name: fix\nsteps:\n  - name: implement\n    type: ai\n    prompt: "Fix: {{description}}"\n',
    });
    const agent = join(sb.base, 'json-agent.js');
    const events = [
      { type: 'system', subtype: 'init', session_id: 'sess-cmd', model: 'other-model' },
      {
        type: 'assistant',
        message: {
          id: 'msg_1',
          model: 'other-model',
          content: [{ type: 'text', text: 'Hi from JSON' }],
          usage: { input_tokens: 7, output_tokens: 1 },
        },
      },
      {
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'Hi from JSON',
        session_id: 'sess-cmd',
        total_cost_usd: 0.5,
        usage: { input_tokens: 7, output_tokens: 3 },
      },
    ];
    writeFileSync(agent, `process.stdout.write(${JSON.stringify(`${events.map((e) => JSON.stringify(e)).join('\n')}\n`)});`);
    const run = await atlas(sb, ['start', 'fix', 'json', '-c', 'ai.agent=command', '-c', `ai.command=node ${agent}`]);
    expect(run.code, run.stderr).toBe(0);
    const [conv] = readConversations(onlyTask(sb).dir);
    expect(conv!.record).toMatchObject({ session_id: 'sess-cmd', model: 'other-model', status: 'completed' });
    expect(conv!.record.stats).toMatchObject({ total_input_tokens: 7, total_output_tokens: 3, cost_usd: 0.5, partial: false });
    expect(conv!.messages.map((m) => m.body)).toEqual(['Fix: json', 'Hi from JSON']);
  }, 60_000);
});

describe('a configuration error the agent reports the same way every time', () => {
  it('fails the step once, with the fix', async () => {
    const fake = await startFakeAnthropic([]);
    try {
      sb = sandbox({
        '.atlas/templates/fix.yaml':
          'name: fix\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 3\n    prompt: "Fix: {{description}}"\n',
      });
      const run = await atlas(sb, ['start', 'fix', 'bad mode', '-c', 'ai.permission_mode=bogus'], { env: claudeEnv(fake, sb.env) });
      expect(run.code).not.toBe(0);
      expect(run.stdout + run.stderr).toContain('Claude Code does not know the configured permission mode');
      expect(run.stdout + run.stderr).toContain('acceptEdits');
      const { hook } = onlyTask(sb);
      expect(hook.history.filter((e: any) => e.trigger === 'step_start')).toHaveLength(1);
      expect(fake.served()).toBe(0);
    } finally {
      await fake.close();
    }
  }, 60_000);
});

// The harness the agent tests rely on: the real Claude Code CLI against the fake Messages API,
// running a real Write tool call and reporting the scripted usage in its result.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeGitRepo } from './helpers/core-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** Runs claude asynchronously: the fake API answers from this same process's event loop. */
function runClaude(cwd: string, env: NodeJS.ProcessEnv, prompt: string): Promise<{ status: number | null; stderr: string; events: any[] }> {
  return new Promise((resolve) => {
    const child = spawn('claude', ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits'], {
      cwd,
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      const events = stdout
        .split('\n')
        .filter((l) => l.trim().startsWith('{'))
        .map((l) => JSON.parse(l));
      resolve({ status, stderr, events });
    });
  });
}

describe('fake Anthropic Messages API with the real Claude Code CLI', () => {
  it('runs a scripted Write tool call for real and reports the scripted usage', async () => {
    fake = await startFakeAnthropic([
      {
        text: 'I will write the file.',
        toolUses: [{ id: 'toolu_write1', name: 'Write', input: { file_path: 'NOTES.md', content: 'hello from the agent\n' } }],
        usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 },
      },
      { text: 'Wrote NOTES.md.', usage: { input_tokens: 150, output_tokens: 10 } },
    ]);
    const repo = makeGitRepo();
    const run = await runClaude(repo, claudeEnv(fake), 'write the notes');
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(join(repo, 'NOTES.md'), 'utf8')).toBe('hello from the agent\n');
    const result = run.events.find((e) => e.type === 'result');
    expect(result).toMatchObject({ is_error: false, result: 'Wrote NOTES.md.' });
    expect(result.usage).toMatchObject({
      input_tokens: 250,
      output_tokens: 30,
      cache_read_input_tokens: 7,
      cache_creation_input_tokens: 3,
    });
    // The tool's result went back to the model in the second request.
    const second = fake.messageRequests()[1]!.body;
    const toolResult = second.messages
      .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
      .find((c: any) => c.type === 'tool_result');
    expect(toolResult.tool_use_id).toBe('toolu_write1');
    expect(fake.allPromptText()).toContain('write the notes');
  });

  it('answers a scripted API error, which Claude Code reports as an error result', async () => {
    fake = await startFakeAnthropic([{ error: { status: 400, type: 'invalid_request_error', message: 'scripted failure' } }]);
    const repo = makeGitRepo();
    const run = await runClaude(repo, claudeEnv(fake), 'anything');
    const result = run.events.find((e) => e.type === 'result');
    expect(result?.is_error).toBe(true);
    expect(existsSync(join(repo, 'NOTES.md'))).toBe(false);
  });
});

// One conversation with the real Claude Code CLI behind `atlas serve`, against the fake Messages
// API (served from this test's event loop, so the server runs as an asynchronous child process):
// a Write tool call runs for real in the conversation's workspace, and the second prompt resumes
// the same Claude session (the model sees the first exchange).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import { checkResponses } from './helpers/openapi-check.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';
import type { ServeProcess } from './helpers/server-fixtures.js';
import { createToken, getJson, prompt, startServe } from './helpers/server-fixtures.js';

checkResponses();

let fake: FakeAnthropic | undefined;
let server: ServeProcess | undefined;
beforeAll(() => ensureBuilt());
afterEach(async () => {
  if (server?.child.exitCode === null) server.child.kill('SIGTERM');
  await server?.exited.catch(() => undefined);
  await fake?.close();
  server = undefined;
  fake = undefined;
});

describe('atlas serve with Claude Code', () => {
  it('streams a real Claude Code turn with its tool call and usage, then resumes its session on the next prompt', async () => {
    fake = await startFakeAnthropic([
      {
        text: 'Writing the notes.',
        toolUses: [{ id: 'toolu_srv1', name: 'Write', input: { file_path: 'NOTES.md', content: 'from the server\n' } }],
        usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 },
      },
      { text: 'Wrote NOTES.md.', usage: { input_tokens: 150, output_tokens: 10 } },
      { text: 'Yes, NOTES.md is there.', usage: { input_tokens: 200, output_tokens: 8 } },
    ]);
    const home = tempDir();
    const token = createToken(home, 'alice');
    server = await startServe(home, [], { flags: ['-c', 'ai.agent=claude'], env: claudeEnv(fake) });

    const first = await prompt(server.url, token, 'claude-1', { prompt: 'write the notes', provider: 'claude' });
    expect(first.status).toBe(200);
    const types = first.events.map((e) => e.event);
    expect(types[0]).toBe('turn_started');
    expect(types).toContain('tool_use');
    expect(types).toContain('tool_result');
    expect(types.at(-1)).toBe('usage');
    const toolResult = first.events.find((e) => e.event === 'tool_result')!;
    expect(toolResult.data).toMatchObject({ id: 'toolu_srv1', name: 'Write', status: 'success' });
    const usage = first.events.at(-1)!.data;
    expect(usage).toMatchObject({
      ok: true,
      usage: { total_input_tokens: 250, total_output_tokens: 30, cache_read_tokens: 7, cache_creation_tokens: 3 },
    });
    expect(usage.session_id).toMatch(/\S/);
    const workspace = join(home, 'server', 'accounts', 'alice', 'conversations', 'claude-1', 'workspace');
    expect(readFileSync(join(workspace, 'NOTES.md'), 'utf8')).toBe('from the server\n');

    const second = await prompt(server.url, token, 'claude-1', { prompt: 'is it there?' });
    const usage2 = second.events.at(-1)!.data;
    expect(usage2).toMatchObject({ ok: true, session_id: usage.session_id });
    expect(usage2.conversation).toMatchObject({ total_input_tokens: 450, total_output_tokens: 38 });
    // The resumed session sent the first exchange along with the new prompt.
    const last = fake.messageRequests().at(-1)!.body;
    const text = JSON.stringify(last.messages);
    expect(text).toContain('write the notes');
    expect(text).toContain('is it there?');
    const messages = (await getJson(server.url, token, '/conversations/claude-1/messages')).json.messages;
    expect(messages.some((m: any) => m.role === 2 && m.tool_calls[0]?.id === 'toolu_srv1' && m.tool_calls[0].status === 'success')).toBe(
      true,
    );
  });
});

/** Every hook-events.jsonl line under a folder, as parsed objects. */
function hookEvents(dir: string): any[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name === 'hook-events.jsonl')
    .flatMap((e) =>
      readFileSync(join(e.parentPath, e.name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    );
}

describe.skipIf(skipSandbox)('atlas serve with Claude Code in the sandbox', () => {
  // Issue 35's gap: sandboxed, the hook cannot write $ATLAS_HOME; its events come to the server
  // through the conversation's hook channel, the resumed session's included.
  it("records the hook events of each turn through the conversation's channel, with no hook error", async () => {
    fake = await startFakeAnthropic([
      { text: 'First answer.', usage: { input_tokens: 100, output_tokens: 20 } },
      { text: 'Second answer.', usage: { input_tokens: 150, output_tokens: 10 } },
    ]);
    const home = tempDir();
    const token = createToken(home, 'alice');
    server = await startServe(home, [], { flags: ['-c', 'ai.agent=claude'], env: claudeEnv(fake), local: false });
    const first = await prompt(server.url, token, 'claude-sb', { prompt: 'first prompt here', provider: 'claude' });
    expect(first.events.at(-1)!.data).toMatchObject({ ok: true });
    const second = await prompt(server.url, token, 'claude-sb', { prompt: 'second prompt here' });
    expect(second.events.at(-1)!.data).toMatchObject({ ok: true, session_id: first.events.at(-1)!.data.session_id });
    const events = hookEvents(join(home, 'sessions'));
    const prompts = events.filter((e) => e.hook_event_name === 'UserPromptSubmit').map((e) => e.prompt);
    expect(prompts.sort()).toEqual(['first prompt here', 'second prompt here']);
    expect(events.filter((e) => e.hook_event_name === 'Stop')).toHaveLength(2);
    expect(existsSync(join(home, 'claude', 'hook-errors.log')) ? readFileSync(join(home, 'claude', 'hook-errors.log'), 'utf8') : '').toBe(
      '',
    );
    // The pipes went with their turns; the channel folder stays, empty.
    expect(readdirSync(join(home, 'server', 'accounts', 'alice', 'conversations', 'claude-sb', 'channel'))).toEqual([]);
  });
});

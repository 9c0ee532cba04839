// Claude Code's hooks in sandbox mode: the hook cannot write $ATLAS_HOME there, so it hands its
// events to atlas over the channel atlas owns (src/integrations/claude/channel-*.ts). The same
// bugfix task, run with the real CLI against the fake Messages API once locally and once in the
// sandbox, leaves the same request folders, events and files, and no hook error.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readJsonLines } from './helpers/claude-hook-fixtures.js';
import { COMMAND_FREE_BUGFIX } from './helpers/claude-task-fixtures.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, onlyTask, sandbox } from './helpers/engine-fixtures.js';
import type { FakeAnthropic, FakeTurn, RecordedRequest } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

function toolResults(request: RecordedRequest): number {
  return JSON.stringify(request.body?.messages ?? []).split('"tool_result"').length - 1;
}

/** Analysis text; then a Write and a Bash call in the worktree; then done. */
function script(request: RecordedRequest): FakeTurn {
  const text = JSON.stringify(request.body?.messages ?? []);
  const worktree = /Fix this bug in the repository at (\S+) \(branch/.exec(text)?.[1];
  if (!worktree) return { text: 'The cause: the greeting is never written.' };
  const done = toolResults(request);
  if (done === 0)
    return {
      text: 'Writing the fix.',
      toolUses: [{ name: 'Write', input: { file_path: join(worktree, 'fixed.txt'), content: 'fixed\n' } }],
    };
  if (done === 1) return { text: 'Checking.', toolUses: [{ name: 'Bash', input: { command: 'cat fixed.txt', description: 'check' } }] };
  return { text: 'Fixed: wrote fixed.txt.' };
}

interface Recorded {
  /** Per request, in the order they started: its files and its events. */
  requests: { files: string[]; events: string[]; state: Record<string, unknown> }[];
  output: string;
  errorLog: boolean;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)).map((p) => `${e.name}/${p}`) : [e.name],
  );
}

async function runTask(sb: Sandbox, fake: FakeAnthropic, mode: '--local' | '--sandbox'): Promise<Recorded> {
  const env = { ...claudeEnv(fake, sb.env), IS_SANDBOX: '1' };
  const run = await atlas(
    sb,
    ['start', 'bugfix', 'greeting is missing', '--no-interactive', mode, '-c', 'ai.permission_mode=bypassPermissions'],
    { env },
  );
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.code, output).toBe(0);
  const task = onlyTask(sb);
  const base = join(task.dir, 'requests');
  const dirs = readdirSync(base).filter((d) => existsSync(join(base, d, '.state.json')));
  const requests = dirs
    .map((d) => ({ dir: join(base, d), state: JSON.parse(readFileSync(join(base, d, '.state.json'), 'utf8')) }))
    .sort((a, b) => String(a.state.started_at).localeCompare(String(b.state.started_at)))
    .map(({ dir, state }) => ({
      // Session logs are named by the session id, which differs between the runs.
      files: walk(dir)
        .map((f) => f.replace(state.session_id, '<session>'))
        .sort(),
      events: readJsonLines(join(dir, 'hook-events.jsonl')).map((e) => `${e.hook_event_name}${e.tool_name ? ` ${e.tool_name}` : ''}`),
      state: {
        files_touched: state.files_touched.map((f: string) => relative(task.task.worktree, f)),
        last_output: state.last_output,
        usage: state.usage,
        ended: Boolean(state.ended_at),
      },
    }));
  return { requests, output, errorLog: existsSync(join(sb.home, 'claude', 'hook-errors.log')) };
}

let fake: FakeAnthropic | undefined;
const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});
beforeAll(() => ensureBuilt(), 180_000);

describe.skipIf(skipSandbox)('Claude Code hooks in sandbox mode', () => {
  it('record every request folder and event that the same task records in local mode, with no hook error', async () => {
    const runs: Record<string, Recorded> = {};
    for (const mode of ['--local', '--sandbox'] as const) {
      const sb = sandbox({ '.atlas/templates/bugfix.yaml': COMMAND_FREE_BUGFIX });
      sandboxes.push(sb);
      fake = await startFakeAnthropic(script);
      runs[mode] = await runTask(sb, fake, mode);
      await fake.close();
      fake = undefined;
    }
    const local = runs['--local']!;
    const boxed = runs['--sandbox']!;
    expect(local.requests).toHaveLength(2);
    expect(local.requests[1]!.events).toEqual([
      'UserPromptSubmit',
      'PreToolUse Write',
      'PostToolUse Write',
      'PreToolUse Bash',
      'PostToolUse Bash',
      'Stop',
      'SessionEnd',
    ]);
    expect(local.requests[1]!.files).toContain('context.md');
    expect(boxed.requests).toEqual(local.requests);
    for (const run of [local, boxed]) {
      expect(run.output).not.toMatch(/hook .*failed|not recorded/i);
      expect(run.errorLog).toBe(false);
    }
  }, 180_000);
});

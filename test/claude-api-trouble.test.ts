// API trouble is visible at once (issue 35 item 5): the real Claude Code against a fake Messages
// API that answers 500, then one that never answers. Claude Code's retries are shown as they
// happen; a run that waits on the API past ai.stall_timeout is stopped with a clear message.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { listConversations } from '../src/conversation/read.js';
import { ATLAS_BIN } from './helpers/claude-hook-fixtures.js';
import { claudeTaskFixture, ONE_AI_STEP_TEMPLATE } from './helpers/claude-task-fixtures.js';
import { onlyTask, sandbox } from './helpers/engine-fixtures.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

const fx = claudeTaskFixture();

/** atlas start, with each line of its output passed to `onLine` as it comes. */
function start(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  onLine: (line: string) => void,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [ATLAS_BIN, 'start', 't', 'the thing', '--no-interactive', '--local', ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let partial = '';
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('API trouble with the real Claude Code', () => {
  it("shows Claude Code's retries of API 500s as they happen, while the API still fails", async () => {
    const sb = (fx.sb = sandbox({ '.atlas/templates/t.yaml': ONE_AI_STEP_TEMPLATE }));
    let healthy = false;
    let failedBeforeShown = 0;
    const fake = (fx.fake = await startFakeAnthropic(() =>
      healthy ? { text: 'Done.' } : { error: { status: 500, type: 'api_error', message: 'boom' } },
    ));
    const run = await start([], claudeEnv(fake, sb.env), sb.repo, (line) => {
      if (!healthy && /the API answered 500/.test(line)) {
        failedBeforeShown = fake.messageRequests().length;
        healthy = true;
      }
    });
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/⚠ the API answered 500 \(server_error\); Claude Code retries, 1 of \d+, in \d+\.\d s/);
    // Shown after the first failed request, before Claude Code tried again.
    expect(failedBeforeShown).toBe(1);
  }, 120_000);

  it('stops a run that waits on a hanging API for ai.stall_timeout, and says why', async () => {
    const sb = (fx.sb = sandbox({ '.atlas/templates/t.yaml': ONE_AI_STEP_TEMPLATE }));
    const fake = (fx.fake = await startFakeAnthropic(() => ({ text: 'never sent', delayMs: 600_000 })));
    const run = await start(['-c', 'ai.stall_timeout=2s'], claudeEnv(fake, sb.env), sb.repo, () => undefined);
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toMatch(
      /Claude Code gave no sign of life for 2(?:\.0)?s while it waited for the model API, so atlas stopped it \(ai\.stall_timeout\)/,
    );
    expect(fake.messageRequests().length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('a run cut off at its timeout before any answer is stored partial, its output tokens unknown', async () => {
    const sb = (fx.sb = sandbox({ '.atlas/templates/t.yaml': ONE_AI_STEP_TEMPLATE }));
    const fake = (fx.fake = await startFakeAnthropic(() => ({ text: 'never sent', delayMs: 600_000 })));
    const run = await start(['-c', 'ai.timeout=2s', '-c', 'ai.stall_timeout=10m'], claudeEnv(fake, sb.env), sb.repo, () => undefined);
    expect(run.output).toMatch(/did not finish within 2(?:\.0)?s/);
    const { dir, hook } = onlyTask(sb);
    const [record] = listConversations(dir);
    expect(record!.stats).toMatchObject({ partial: true, total_input_tokens: 0, total_output_tokens: null });
    const failed = hook.history.find((e: any) => e.trigger === 'step_failed');
    expect(failed.details.tokens).toMatchObject({ partial: true });
  }, 120_000);
});

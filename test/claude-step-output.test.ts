// What an ai step with the real Claude Code says about itself (issue 35): an edit that failed is
// not counted as a file edited, and Claude Code's "Could not parse message into JSON" noise is
// kept out of the step's output.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StderrFilter } from '../src/agent/claude-noise.js';
import { claudeTaskFixture, ONE_AI_STEP_TEMPLATE } from './helpers/claude-task-fixtures.js';
import { atlas, onlyTask, sandbox } from './helpers/engine-fixtures.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

const fx = claudeTaskFixture();

describe('an ai step says what it did', () => {
  it('does not count a Write that failed as a file edited', async () => {
    const sb = (fx.sb = sandbox({ '.atlas/templates/t.yaml': ONE_AI_STEP_TEMPLATE }));
    // Claude Code refuses to overwrite a file the session has not read: the Write fails.
    const fake = (fx.fake = await startFakeAnthropic((request) => {
      const sent = JSON.stringify(request.body?.messages ?? []);
      if (sent.includes('tool_result')) return { text: 'The write failed.' };
      return {
        text: 'Overwriting.',
        toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: join(onlyTask(sb).task.worktree, 'README.md'), content: 'new\n' } }],
      };
    }));
    const run = await atlas(sb, ['start', 't', 'overwrite it', '--no-interactive', '--local'], { env: claudeEnv(fake, sb.env) });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(JSON.stringify(fake.requests.map((r) => r.body))).toMatch(/is_error.{0,20}true|has not been read/);
    expect(run.stdout).toMatch(/implement done .*agent finished/);
    expect(run.stdout).not.toMatch(/file\(s\) edited/);
  }, 90_000);

  it("keeps Claude Code's JSON-parse noise out, whole lines and split ones", () => {
    const f = new StderrFilter();
    let out = f.push('first line\nCould not parse message into JSON: {"ty');
    out += f.push('pe":"x"}\nreal pro');
    out += f.push('blem\n  Could not parse message into JSON\nlast');
    out += f.end();
    expect(out).toBe('first line\nreal problem\nlast');
    expect(new StderrFilter().end()).toBe('');
  });
});

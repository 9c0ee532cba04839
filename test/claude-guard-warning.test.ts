// A guard refusal tells the truth (issue 22, defect 5): when atlas's guard refuses the agent a read
// of the signing key, the step's warning says atlas refused it and why, never how to allow it; a
// call refused by Claude Code's permission settings still gets the hint on allowing it.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeTaskFixture } from './helpers/claude-task-fixtures.js';
import { atlas, onlyTask, sandbox } from './helpers/engine-fixtures.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';

const TEMPLATE = 'name: fix\nsteps:\n  - name: implement\n    type: ai\n    max_attempts: 1\n    prompt: "Fix: {{description}}"\n';

const fx = claudeTaskFixture();

describe('warnings about refused tool calls', () => {
  it('says atlas refused the key read and why; keeps the allow hint for a permission denial only', async () => {
    const sb = sandbox({ '.atlas/templates/fix.yaml': TEMPLATE });
    fx.sb = sb;
    const key = join(sb.home, 'keys', 'master.key');
    const fake = await startFakeAnthropic([
      {
        text: 'Looking around.',
        toolUses: [
          { id: 'toolu_key', name: 'Read', input: { file_path: key } },
          { id: 'toolu_curl', name: 'Bash', input: { command: 'curl http://example.invalid' } },
        ],
      },
      { text: 'Done.' },
    ]);
    fx.fake = fake;
    const run = await atlas(sb, ['start', 'fix', 'the crash'], { env: claudeEnv(fake, sb.env) });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const guardLine = run.stdout.split('\n').find((l) => l.includes('atlas refused'));
    expect(guardLine).toMatch(/warning: atlas refused 1 tool call of the agent \(atlas guard\): Read\(.*master\.key\): .*signing keys/);
    expect(guardLine).not.toContain('allowed_tools');
    const permissionLine = run.stdout.split('\n').find((l) => l.includes('the agent was refused'));
    expect(permissionLine).toMatch(/Bash\(curl http:\/\/example\.invalid\); allow what the step needs with config ai\.allowed_tools/);
    expect(permissionLine).not.toContain('master.key');
    const complete = onlyTask(sb).hook.history.find((e: any) => e.trigger === 'step_complete');
    expect(complete.details.permission_denials).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tool: 'Read', refused_by: 'atlas guard' }),
        expect.objectContaining({ tool: 'Bash', call: 'Bash(curl http://example.invalid)' }),
      ]),
    );
  }, 90_000);
});

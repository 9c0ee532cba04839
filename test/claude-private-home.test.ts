// Claude Code in the sandbox with no CLAUDE_CONFIG_DIR (the person's ~/.claude and ~/.claude.json):
// the step's $HOME is the task's private one, where both are linked to the real ones, and the
// agent's sessions and settings land in the person's folder as they would outside the sandbox.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atlas, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import { repoWithTemplate, skipSandbox } from './helpers/sandbox-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)("Claude Code with the person's own config folder, in the sandbox", { timeout: 120_000 }, () => {
  let fake: FakeAnthropic | undefined;
  afterAll(async () => fake?.close());

  it('runs, and keeps its session in ~/.claude as outside', async () => {
    const home = tempDir('atlas-home-');
    const userHome = tempDir('atlas-user-home-');
    mkdirSync(join(userHome, '.claude'));
    writeFileSync(join(userHome, '.claude.json'), '{}\n');
    fake = await startFakeAnthropic([
      { text: 'Writing the file.', toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: 'NOTES.md', content: 'written\n' } }] },
      { text: 'Done.' },
    ]);
    const repo = repoWithTemplate('  - name: implement\n    type: ai\n    prompt: "Do {{description}}"\n');
    const env: NodeJS.ProcessEnv = { ...claudeEnv(fake), ATLAS_HOME: home, HOME: userHome, IS_SANDBOX: '1' };
    delete env['CLAUDE_CONFIG_DIR'];
    const result = await atlas(
      [
        'start',
        't',
        'agent at home',
        '--no-interactive',
        '--sandbox',
        '--workspace',
        'agent',
        '-c',
        'ai.permission_mode=bypassPermissions',
      ],
      { cwd: repo, env },
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(readFileSync(join(home, 'workspaces', 'agent', 'worktree', 'NOTES.md'), 'utf8')).toBe('written\n');
    expect(existsSync(join(userHome, '.claude', 'projects'))).toBe(true);
    expect(readdirSync(join(userHome, '.claude', 'projects')).length).toBeGreaterThan(0);
    const privateHome = readdirSync(join(home, 'workspaces', 'agent', 'tasks')).map((t) =>
      join(home, 'workspaces', 'agent', 'tasks', t, 'home'),
    )[0]!;
    // The private home holds the two links and nothing of the agent's own.
    expect(readdirSync(privateHome).sort()).toEqual(['.claude', '.claude.json']);
    expect(lstatSync(join(privateHome, '.claude.json')).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(join(userHome, '.claude.json'), 'utf8'))).toBeTypeOf('object');
  });
});

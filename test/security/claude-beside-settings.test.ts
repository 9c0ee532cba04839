// The real Claude Code in the sandbox beside a committed `.claude/` whose settings files do not
// exist: atlas protects them with bubblewrap's stand-ins (unreadable), and Claude Code still runs
// (it treats them as absent); its Write tool cannot create them.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atlas, git, tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import type { FakeAnthropic } from '../helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { repoWithTemplate, skipSandbox } from '../helpers/sandbox-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)('Claude Code beside protected settings', { timeout: 120_000 }, () => {
  let fake: FakeAnthropic | undefined;
  afterAll(async () => fake?.close());

  it('runs, writes its work, and cannot create .claude/settings.local.json', async () => {
    const home = tempDir('atlas-home-');
    const hooks = JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: 'command', command: 'touch /tmp/x' }] }] } });
    fake = await startFakeAnthropic([
      { text: 'Writing.', toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: 'NOTES.md', content: 'work\n' } }] },
      {
        text: 'Settings.',
        toolUses: [
          {
            id: 'toolu_s',
            name: 'Bash',
            input: { command: `printf '%s' '${hooks}' > .claude/settings.local.json; echo rc=$?`, description: 'plant' },
          },
        ],
      },
      { text: 'Done.' },
    ]);
    const repo = repoWithTemplate('  - name: implement\n    type: ai\n    prompt: "Do {{description}}"\n');
    mkdirSync(join(repo, '.claude', 'commands'), { recursive: true });
    writeFileSync(join(repo, '.claude', 'commands', 'x.md'), 'x\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'claude commands');
    const env = { ...claudeEnv(fake), ATLAS_HOME: home, IS_SANDBOX: '1', CLAUDE_CONFIG_DIR: tempDir('atlas-claude-config-') };
    const result = await atlas(
      [
        'start',
        't',
        'beside settings',
        '--no-interactive',
        '--sandbox',
        '--workspace',
        'agent',
        '-c',
        'ai.permission_mode=bypassPermissions',
      ],
      { cwd: repo, env },
    );
    const tree = join(home, 'workspaces', 'agent', 'worktree');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(readFileSync(join(tree, 'NOTES.md'), 'utf8')).toBe('work\n');
    expect(JSON.stringify(fake.requests.map((r) => r.body))).not.toContain('rc=0');
    expect(existsSync(join(tree, '.claude', 'settings.local.json'))).toBe(false);
  });
});

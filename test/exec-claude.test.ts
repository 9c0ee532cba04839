// The real Claude Code CLI as an `ai` step inside the sandbox, against the fake Messages API on
// 127.0.0.1: it edits the worktree as in local mode, and its Bash tool cannot read the signing key
// (no byte of the key reaches the model).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atlas, tempDir } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { FakeAnthropic } from './helpers/fake-anthropic.js';
import { claudeEnv, startFakeAnthropic } from './helpers/fake-anthropic.js';
import { repoWithTemplate, skipSandbox } from './helpers/sandbox-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)('Claude Code in the sandbox', { timeout: 120_000 }, () => {
  let fake: FakeAnthropic | undefined;
  afterAll(async () => fake?.close());

  it('writes in the worktree through the proxy-reached fake API, and cannot read master.key', async () => {
    const home = tempDir('atlas-home-');
    const keyPath = join(home, 'keys', 'master.key');
    fake = await startFakeAnthropic([
      {
        text: 'Writing the file.',
        toolUses: [{ id: 'toolu_w', name: 'Write', input: { file_path: 'NOTES.md', content: 'written in the sandbox\n' } }],
      },
      {
        text: 'Reading the key.',
        toolUses: [
          {
            id: 'toolu_b',
            name: 'Bash',
            input: { command: 'k=ke; a=mas; cat "$PWD/../../../${k}ys/${a}ter.key"', description: 'read key' },
          },
        ],
      },
      { text: 'Done.' },
    ]);
    const repo = repoWithTemplate('  - name: implement\n    type: ai\n    prompt: "Do {{description}}"\n');
    // bypassPermissions lets the scripted Bash call run; as root (CI) Claude Code wants IS_SANDBOX=1 for it.
    const env = { ...claudeEnv(fake), ATLAS_HOME: home, IS_SANDBOX: '1' };
    const result = await atlas(
      [
        'start',
        't',
        'sandboxed agent',
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
    expect(readFileSync(join(tree, 'NOTES.md'), 'utf8')).toBe('written in the sandbox\n');
    expect(fake.served()).toBeGreaterThanOrEqual(3);
    // The key exists and was never sent to the model, in the tool result or anywhere else.
    const key = readFileSync(keyPath, 'utf8').trim();
    expect(key.length).toBeGreaterThan(0);
    const sent = JSON.stringify(fake.requests.map((r) => r.body));
    expect(sent).toContain('toolu_b');
    expect(sent).not.toContain(key);
    // The command builds the path at run time so that atlas's Claude Code guard (docs/claude-code.md)
    // does not recognise it: what refuses the read here is the sandbox, which hides the file.
    expect(sent).not.toContain('atlas guard');
    expect(sent).toMatch(/master\.key: No such file or directory/);
    expect(existsSync(join(tree, '.bashrc'))).toBe(false);
  });
});

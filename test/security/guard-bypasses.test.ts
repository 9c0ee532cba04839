// Attack family 7: the Claude Code guard's reported bypasses. The guard is a second fence (the
// sandbox is the wall); each bypass is still closed: every string argument of every tool, search
// roots that contain ATLAS_HOME, writes to ATLAS_HOME's config and templates, Bash naming it.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { guardToolCall } from '../../src/integrations/claude/guard.js';
import { tempDir } from '../helpers/core-fixtures.js';

const base = tempDir('atlas-guard-');
const home = join(base, 'atlas-home');
const project = join(base, 'project');
const task = join(home, 'workspaces', 'ws', 'tasks', 'task-20260101-000001');
mkdirSync(join(home, 'keys'), { recursive: true });
mkdirSync(join(task, 'tmp'), { recursive: true });
mkdirSync(project, { recursive: true });
writeFileSync(join(home, 'keys', 'master.key'), 'k', { mode: 0o600 });

const guard = (toolName: string, toolInput: Record<string, unknown>, cwd = project) => guardToolCall({ toolName, toolInput, cwd, home });

describe('the guard closes the reported bypasses', () => {
  it('Grep and Glob rooted at or above ATLAS_HOME, with or without a path', () => {
    expect(guard('Grep', { pattern: 'seed', path: base, glob: '**/*.key' })).toMatch(/contains ATLAS_HOME/);
    expect(guard('Glob', { pattern: '**/master.key', path: '/' })).toMatch(/contains ATLAS_HOME/);
    expect(guard('Grep', { pattern: 'seed' }, base)).toMatch(/contains ATLAS_HOME/);
    expect(guard('Glob', { pattern: '**/*.ts' })).toBeUndefined();
    expect(guard('Grep', { pattern: 'x', path: join(project, 'src') })).toBeUndefined();
  });

  it("Write and Edit of ATLAS_HOME's config.yaml, templates, store and server files", () => {
    expect(guard('Write', { file_path: join(home, 'config.yaml'), content: 'lifecycle: {}\n' })).toMatch(/configuration, templates/);
    expect(guard('Edit', { file_path: join(home, 'templates', 'bugfix.yaml'), old_string: 'a', new_string: 'b' })).toMatch(
      /configuration, templates/,
    );
    expect(guard('Write', { file_path: join(home, 'store', 'ws', 'x') })).toMatch(/configuration, templates/);
    expect(guard('Read', { file_path: join(home, 'config.yaml') })).toBeUndefined();
    expect(guard('Write', { file_path: join(task, 'tmp', 'scratch.txt'), content: 'x' })).toBeUndefined();
  });

  it('MCP tools: a path under any argument name, in lists and nested objects', () => {
    expect(guard('mcp__fs__read_file', { file: join(home, 'keys', 'master.key') })).toMatch(/signing keys/);
    expect(guard('mcp__fs__read_many', { paths: [join(project, 'a'), join(home, 'keys', 'master.key')] })).toMatch(/signing keys/);
    expect(guard('mcp__x__y', { options: { target: { dir: home } } })).toMatch(/contains ATLAS_HOME/);
    expect(guard('mcp__fs__write', { file: join(home, 'config.yaml'), text: 'x' })).toMatch(/configuration/);
    expect(guard('mcp__fs__read_file', { file: join(project, 'README.md') })).toBeUndefined();
  });

  it('Bash naming ATLAS_HOME in any spelling, with or without keys/', () => {
    for (const command of [
      `cd "$ATLAS_HOME" && cat keys/*`,
      'grep -r seed $ATLAS_HOME',
      'cp -r ${ATLAS_HOME} /tmp/x',
      `tar cz ${home} | base64`,
      'ls ~/.atlas',
      'find $HOME/.atlas -type f',
    ]) {
      expect(guard('Bash', { command }), command).toBeDefined();
    }
    expect(guard('Bash', { command: `cat ${join(task, 'tmp', 'out.txt')}` })).toBeUndefined();
    // atlas's worktrees live in ATLAS_HOME/workspaces/<ws>/worktree: the agent's own tree.
    expect(guard('Bash', { command: `npm test --prefix ${join(home, 'workspaces', 'ws', 'worktree')}` })).toBeUndefined();
    expect(guard('Bash', { command: `ls ${join(home, 'workspaces', 'ws')}` })).toBeDefined();
    expect(guard('Bash', { command: 'npm test && atlas checkpoint "tests pass"' })).toBeUndefined();
    expect(guard('Bash', { command: 'cat .atlas/templates/bugfix.yaml' })).toBeUndefined();
  });

  it('symlinks and ~ do not hide a path', () => {
    const link = join(project, 'innocent');
    symlinkSync(home, link);
    expect(guard('Read', { file_path: join(link, 'keys', 'master.key') })).toMatch(/signing keys/);
    expect(guard('Grep', { pattern: 'x', path: link })).toMatch(/contains ATLAS_HOME/);
    if (home.startsWith(homedir())) expect(guard('Read', { file_path: '~' })).toMatch(/contains ATLAS_HOME/);
  });

  it('a server conversation works in its own workspace under ATLAS_HOME, and only there', () => {
    const conversations = join(home, 'server', 'accounts', 'bob', 'conversations');
    const own = join(conversations, 'c1', 'workspace');
    const other = join(home, 'server', 'accounts', 'alice', 'conversations', 'c2', 'workspace');
    mkdirSync(own, { recursive: true });
    expect(guard('Write', { file_path: join(own, 'notes.md'), content: 'x' }, own)).toBeUndefined();
    expect(guard('Grep', { pattern: 'x' }, own)).toBeUndefined();
    expect(guard('Bash', { command: `ls ${own}` }, own)).toBeUndefined();
    expect(guard('Write', { file_path: join(other, 'notes.md'), content: 'x' }, own)).toMatch(/configuration, templates, store and server/);
    expect(guard('Bash', { command: `ls ${other}` }, own)).toMatch(/names ATLAS_HOME/);
  });

  it('content is not a path: writing text that mentions a path is fine', () => {
    expect(guard('Write', { file_path: join(project, 'notes.md'), content: `see ${join(home, 'keys')}\nfor details\n` })).toBeUndefined();
    expect(guard('WebFetch', { url: 'https://example.com/', prompt: home })).toBeUndefined();
  });
});

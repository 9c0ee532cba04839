// The exec room's parts on their own: the sandbox policy from a real repository and worktree,
// readiness and its fail-fast error, the doctor, and the execution record.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { AtlasError } from '../src/domain/errors.js';
import { runDoctor } from '../src/exec/doctor.js';
import { localExecutor } from '../src/exec/local.js';
import { assertSandboxReady, checkReadiness, installHint } from '../src/exec/readiness.js';
import { agentStatePaths, buildPolicy, gitWritePaths, isInside, SECRET_PATHS } from '../src/exec/sandbox/policy.js';
import {
  createTaskExecutor,
  describeExecution,
  describeModeChange,
  otherTaskWorktrees,
  readExecutionRecord,
} from '../src/exec/task-executor.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

async function defaults(home: string, overrides: Record<string, string> = {}): Promise<Config> {
  return (await loadConfig({ home, env: {}, overrides })).config;
}

describe('sandbox policy', () => {
  it('writes: the worktree, the git folders a linked worktree commits to, the task temp folder, extras', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    const tree = join(tempDir('atlas-wt-'), 'tree');
    git(repo, 'worktree', 'add', '-q', '-b', 'feature', tree);
    const userHome = tempDir('atlas-user-');
    const config = await defaults(home, {
      'execution.sandbox.allow_write': '["~/cache"]',
      'execution.sandbox.deny_read': '["~/private"]',
      'ai.agent': 'command',
    });
    const policy = buildPolicy({
      task: { id: 't1', worktree: tree, workspace_id: 'ws' },
      taskDir: join(home, 'task'),
      home,
      config,
      otherWorktrees: [],
      env: {},
      userHome,
    });
    expect(policy.worktree).toBe(tree);
    // The repository's objects are read-only: the step writes its own into the task's store.
    expect(policy.allow_write).toEqual([
      tree,
      join(repo, '.git', 'refs', 'heads'),
      join(repo, '.git', 'logs'),
      join(repo, '.git', 'worktrees', 'tree'),
      join(home, 'task', 'objects'),
      join(home, 'task', 'tmp'),
      join(home, 'task', 'home'),
      join(userHome, 'cache'),
    ]);
    expect(policy.home).toBe(join(home, 'task', 'home'));
    expect(policy.deny_write).toEqual(
      expect.arrayContaining([join(repo, '.git', 'objects'), join(repo, '.git', 'worktrees', 'tree', 'HEAD')]),
    );
    expect(policy.git_env).toEqual({
      GIT_OBJECT_DIRECTORY: join(home, 'task', 'objects'),
      GIT_ALTERNATE_OBJECT_DIRECTORIES: join(repo, '.git', 'objects'),
    });
    expect(policy.tmpdir).toBe(join(home, 'task', 'tmp'));
    expect(policy.deny_read).toEqual(
      expect.arrayContaining([join(home, 'keys'), ...SECRET_PATHS.map((p) => join(userHome, p)), join(userHome, 'private')]),
    );
    expect(policy.allowed_domains).toEqual(['api.anthropic.com', 'registry.npmjs.org']);
    // In the repository itself (in place) nothing outside the tree is needed.
    expect(gitWritePaths(repo)).toEqual([]);
    expect(gitWritePaths(tempDir())).toEqual([]);
  });

  it("denies other workspaces and other tasks' checkouts, except what this task needs; adds the model API host", async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    const tree = join(home, 'workspaces', 'mine', 'worktree');
    git(repo, 'worktree', 'add', '-q', '-b', 'mine', tree);
    for (const ws of ['mine', 'other']) mkdirSync(join(home, 'workspaces', ws), { recursive: true });
    const elsewhere = tempDir('atlas-other-checkout-');
    const config = await defaults(home, { 'ai.agent': 'command' });
    const policy = buildPolicy({
      task: { id: 't1', worktree: tree, workspace_id: 'mine' },
      taskDir: join(home, 'workspaces', 'mine', 'tasks', 't1'),
      home,
      config,
      // The repository's own checkout holds this task's .git: it stays readable.
      otherWorktrees: [join(home, 'workspaces', 'other', 'worktree'), elsewhere, repo],
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:4321/v1' },
      userHome: tempDir(),
    });
    // Whole parents (one mount each, however many tasks and conversations), this task's writable
    // folders bound back by the sandbox, its own task files readable one by one.
    expect(policy.deny_read).toEqual(expect.arrayContaining([join(home, 'workspaces'), join(home, 'server'), join(home, 'store')]));
    expect(policy.deny_read).not.toContain(join(home, 'workspaces', 'other'));
    expect(policy.deny_read).not.toContain(join(home, 'workspaces', 'other', 'worktree'));
    expect(policy.deny_read).toContain(elsewhere);
    expect(policy.deny_read).not.toContain(repo);
    expect(policy.allow_write).toContain(tree);
    const taskDir = join(home, 'workspaces', 'mine', 'tasks', 't2');
    mkdirSync(join(taskDir, 'tmp'), { recursive: true });
    writeFileSync(join(taskDir, 'hook.json'), '{}');
    const own = buildPolicy({
      task: { id: 't2', worktree: tree, workspace_id: 'mine' },
      taskDir,
      home,
      config,
      otherWorktrees: [],
      env: {},
      userHome: tempDir(),
    });
    expect(own.allow_read).toEqual([join(taskDir, 'hook.json')]);
    expect(policy.allowed_domains).toContain('127.0.0.1:4321');
    const named = buildPolicy({
      task: { id: 't1', worktree: tree, workspace_id: 'mine' },
      taskDir: tempDir(),
      home,
      config,
      otherWorktrees: [],
      env: { ANTHROPIC_BASE_URL: 'https://api.example.com' },
      userHome: tempDir(),
    });
    expect(named.allowed_domains).toContain('api.example.com');
    const bad = buildPolicy({
      task: { id: 't1', worktree: tree, workspace_id: 'mine' },
      taskDir: tempDir(),
      home,
      config,
      otherWorktrees: [],
      env: { ANTHROPIC_BASE_URL: 'not a url' },
      userHome: tempDir(),
    });
    expect(bad.allowed_domains).toEqual(['api.anthropic.com', 'registry.npmjs.org']);
    expect(isInside('/a/b', '/a')).toBe(true);
    expect(isInside('/ab', '/a')).toBe(false);
  });

  it('gives Claude Code its state folder, its settings read-only', async () => {
    const home = tempDir('atlas-home-');
    const userHome = tempDir('atlas-user-');
    mkdirSync(join(userHome, '.claude'));
    writeFileSync(join(userHome, '.claude', 'settings.json'), '{}');
    writeFileSync(join(userHome, '.claude.json'), '{}');
    const claude = await defaults(home);
    // An absent settings file gets an empty one, read-only like the rest: no step can plant hooks there.
    const settings = ['settings.json', 'settings.local.json'];
    expect(agentStatePaths(claude, {}, userHome)).toEqual({
      write: [join(userHome, '.claude'), join(userHome, '.claude.json')],
      denyWrite: settings.map((f) => join(userHome, '.claude', f)),
    });
    expect(readFileSync(join(userHome, '.claude', 'settings.json'), 'utf8')).toBe('{}');
    expect(readFileSync(join(userHome, '.claude', 'settings.local.json'), 'utf8')).toBe('{}\n');
    const dir = tempDir('atlas-claude-config-');
    expect(agentStatePaths(claude, { CLAUDE_CONFIG_DIR: dir }, userHome)).toEqual({
      write: [dir],
      denyWrite: settings.map((f) => join(dir, f)),
    });
    expect(agentStatePaths(claude, { CLAUDE_CONFIG_DIR: join(dir, 'absent') }, userHome)).toEqual({ write: [], denyWrite: [] });
    expect(agentStatePaths(await defaults(home, { 'ai.agent': 'command' }), {}, userHome)).toEqual({ write: [], denyWrite: [] });
  });
});

describe('readiness', () => {
  it('names each missing tool and the install command; fails fast with exit 2', async () => {
    const empty = tempDir('atlas-path-');
    const r = await checkReadiness({ PATH: empty }, 'linux');
    expect(r.ready).toBe(false);
    expect(r.tools.map((t) => [t.name, t.path])).toEqual([
      ['bwrap', undefined],
      ['socat', undefined],
      ['rg', undefined],
    ]);
    const error = await assertSandboxReady({ PATH: empty }, 'linux').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtlasError);
    expect((error as AtlasError).exitCode).toBe(2);
    expect((error as AtlasError).message).toContain(
      'bwrap (bubblewrap) is not installed; socat (socat) is not installed; rg (ripgrep) is not installed',
    );
    expect((error as AtlasError).hint).toContain('sudo apt-get install bubblewrap socat ripgrep');
    expect(installHint([{ name: 'rg', apt: 'ripgrep', brew: 'ripgrep' }], 'darwin')).toBe('install it: brew install ripgrep');
    const mac = await checkReadiness({ PATH: empty }, 'darwin');
    expect(mac.tools.map((t) => t.name)).toEqual(['rg']);
    const windows = await checkReadiness({ PATH: empty }, 'win32');
    expect(windows.ready).toBe(false);
    expect(windows.problems[0]).toContain('no sandbox for win32');
    await expect(assertSandboxReady({ PATH: empty }, 'win32')).rejects.toThrow(/no sandbox for win32/);
  });

  it('the doctor reports local mode as fine without a sandbox, and shows the policy of a new task', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    const config = await defaults(home);
    const path = process.env['PATH'];
    process.env['PATH'] = tempDir('atlas-path-');
    try {
      const report = await runDoctor({ home, config, cwd: repo });
      expect(report.ok).toBe(true);
      expect(report.sandbox.ready).toBe(false);
      expect(report.sandbox.trial).toBeUndefined();
      expect(report.policy_for.task_id).toBeNull();
      const sandboxConfig = await defaults(home, { 'execution.mode': 'sandbox' });
      expect((await runDoctor({ home, config: sandboxConfig, cwd: repo })).ok).toBe(false);
    } finally {
      process.env['PATH'] = path;
    }
  });
});

describe('execution record', () => {
  it('local mode records the mode and needs nothing', async () => {
    const home = tempDir('atlas-home-');
    const taskDir = tempDir('atlas-task-');
    const run = await createTaskExecutor({
      task: { id: 't', worktree: tempDir(), workspace_id: 'w' },
      taskDir,
      home,
      config: await defaults(home),
    });
    expect(run.executor).toBe(localExecutor);
    expect(readExecutionRecord(taskDir)?.mode).toBe('local');
    await run.release();
    expect(describeExecution(run.record)).toBeUndefined();
    expect(describeModeChange({ record: run.record, previous: { ...run.record, mode: 'sandbox' } })).toContain('this one runs locally');
    expect(describeModeChange(run)).toBeUndefined();
    writeFileSync(join(taskDir, 'execution.json'), '{"mode":"elsewhere"}');
    expect(readExecutionRecord(taskDir)).toBeUndefined();
    expect(readExecutionRecord(tempDir())).toBeUndefined();
    expect(otherTaskWorktrees(home, 't')).toEqual([]);
  });
});

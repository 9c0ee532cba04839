// The exec room's parts on their own: the policy from a real repository and worktree, readiness
// and its fail-fast error, the litter record and sweep rules, the execution record, the doctor.
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findExecutable } from '../src/agent/find-executable.js';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { AtlasError } from '../src/domain/errors.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import type { CheckedTask } from '../src/domain/receipt-policy.js';
import { evaluatePolicies } from '../src/domain/receipt-policy.js';
import { runDoctor } from '../src/exec/doctor.js';
import { localExecutor } from '../src/exec/local.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { assertSandboxReady, checkReadiness, installHint } from '../src/exec/readiness.js';
import { runProcess, SETUP_ATTEMPTS } from '../src/exec/run-process.js';
import {
  absentStubPaths,
  finishLitter,
  LITTER_FILE,
  readLitter,
  recordLitter,
  removeStubs,
  sweepLitter,
} from '../src/exec/sandbox/litter.js';
import { describeSweep } from '../src/exec/sandbox/litter-text.js';
import { agentStatePaths, buildPolicy, gitWritePaths, isInside, SECRET_PATHS } from '../src/exec/sandbox/policy.js';
import { findBridgeProcesses } from '../src/exec/sandbox/socat.js';
import {
  createTaskExecutor,
  describeExecution,
  describeModeChange,
  otherTaskWorktrees,
  readExecutionRecord,
} from '../src/exec/task-executor.js';
import type { ProcessExecutor } from '../src/exec/types.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

async function defaults(home: string, overrides: Record<string, string> = {}): Promise<Config> {
  return (await loadConfig({ home, env: {}, overrides })).config;
}

function stub(path: string): void {
  writeFileSync(path, '');
  chmodSync(path, 0o444);
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

describe('litter', () => {
  it('sweeps only stubs a dead run recorded: not user files, not tracked files, not while the run lives', async () => {
    const tree = makeGitRepo({ '.gitmodules': '' });
    const taskDir = tempDir('atlas-task-');
    expect(await absentStubPaths(tree)).toEqual(
      expect.arrayContaining([join(tree, '.bashrc'), join(tree, '.claude'), join(tree, '.vscode')]),
    );
    expect(await absentStubPaths(tree)).not.toContain(join(tree, '.gitmodules'));
    mkdirSync(join(tree, '.claude'));
    mkdirSync(join(tree, '.vscode'));
    writeFileSync(join(tree, '.vscode', 'settings.json'), '{}');
    stub(join(tree, '.bashrc'));
    stub(join(tree, '.profile'));
    writeFileSync(join(tree, '.zshrc'), ''); // writable: a user's file
    stub(join(tree, '.ripgreprc'));
    git(tree, 'add', '-f', '.ripgreprc');
    chmodSync(join(tree, '.gitmodules'), 0o444);
    const stubs = ['.bashrc', '.profile', '.zshrc', '.ripgreprc', '.gitmodules', '.claude', '.vscode', '.idea'].map((p) => join(tree, p));
    // A live writer (this process): nothing is litter yet.
    recordLitter(taskDir, { worktree: tree, stubs: [...stubs, '/etc/passwd'], sockets: [], temp_dirs: [] });
    expect(await sweepLitter(taskDir)).toBeUndefined();
    // The same record from a dead process.
    const record = { ...readLitter(taskDir)!, pid: 2 ** 22 + 12345, process_start: 'linux:gone' };
    const socketDir = tempDir('atlas-sock-');
    const socket = join(socketDir, 'claude-http-test.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(socket, () => r()));
    const emptyDir = join(socketDir, 'claude-empty-x');
    mkdirSync(emptyDir);
    writeFileSync(
      join(taskDir, LITTER_FILE),
      JSON.stringify({ ...record, sockets: [socket, join(socketDir, 'missing.sock')], temp_dirs: [emptyDir] }),
    );
    const dry = await sweepLitter(taskDir, { dryRun: true });
    expect(dry?.stubs.sort()).toEqual([join(tree, '.bashrc'), join(tree, '.claude'), join(tree, '.profile')]);
    expect(existsSync(join(tree, '.bashrc'))).toBe(true);
    const swept = await sweepLitter(taskDir);
    expect(swept?.stubs.sort()).toEqual([join(tree, '.bashrc'), join(tree, '.claude'), join(tree, '.profile')]);
    expect(swept?.sockets).toEqual([socket]);
    expect(swept?.temp_dirs).toEqual([emptyDir]);
    expect(existsSync(socket)).toBe(false);
    server.close();
    for (const kept of ['.zshrc', '.ripgreprc', '.gitmodules', '.vscode/settings.json'])
      expect(existsSync(join(tree, kept)), kept).toBe(true);
    expect(existsSync(join(taskDir, LITTER_FILE))).toBe(false);
    expect(describeSweep(swept!, tree)).toBe(
      `3 sandbox stub(s) in ${tree} (.bashrc, .claude, .profile), 1 bridge socket(s), 1 empty temp folder(s)`,
    );
    expect(describeSweep({ worktree: tree, stubs: [], sockets: [], temp_dirs: [], processes: [7] }, tree)).toBe(
      '1 orphaned socat process(es)',
    );
    // Another host's record is never swept here; a broken record is no record.
    writeFileSync(join(taskDir, LITTER_FILE), JSON.stringify({ ...record, host: `not-${hostname()}` }));
    expect(await sweepLitter(taskDir)).toBeUndefined();
    writeFileSync(join(taskDir, LITTER_FILE), '{"pid":"x"}');
    expect(readLitter(taskDir)).toBeUndefined();
  });

  it('removes stubs after normal runs and forgets the record once they are gone', () => {
    const tree = tempDir('atlas-tree-');
    const taskDir = tempDir('atlas-task-');
    mkdirSync(join(tree, '.claude'));
    stub(join(tree, '.bashrc'));
    writeFileSync(join(tree, '.profile'), 'real');
    recordLitter(taskDir, {
      worktree: tree,
      stubs: [join(tree, '.bashrc'), join(tree, '.claude'), join(tree, '.profile')],
      sockets: ['/tmp/a.sock'],
      temp_dirs: [],
    });
    recordLitter(taskDir, { worktree: tree, stubs: [], sockets: ['/tmp/b.sock'], temp_dirs: ['/tmp/claude-empty-y'] });
    expect(readLitter(taskDir)?.sockets).toEqual(['/tmp/a.sock', '/tmp/b.sock']);
    finishLitter(taskDir);
    expect(existsSync(join(taskDir, LITTER_FILE))).toBe(true); // stubs still there
    removeStubs(readLitter(taskDir)!.stubs);
    expect(existsSync(join(tree, '.bashrc'))).toBe(false);
    expect(existsSync(join(tree, '.claude'))).toBe(false);
    expect(readFileSync(join(tree, '.profile'), 'utf8')).toBe('real');
    writeFileSync(join(taskDir, LITTER_FILE), JSON.stringify({ ...readLitter(taskDir)!, stubs: [join(tree, '.bashrc')] }));
    finishLitter(taskDir);
    expect(existsSync(join(taskDir, LITTER_FILE))).toBe(false);
  });

  it('finds socat bridges by the socket they listen on', async () => {
    const socat = findExecutable('socat');
    if (!socat || process.platform !== 'linux') return;
    const dir = tempDir('atlas-sock-');
    const socket = join(dir, 'claude-http-unit.sock');
    const bin = join(dir, 'socat');
    symlinkSync(socat, bin);
    const child = (await import('node:child_process')).spawn(bin, [`UNIX-LISTEN:${socket},fork,reuseaddr`, 'TCP:127.0.0.1:9'], {
      stdio: 'ignore',
    });
    try {
      const deadline = Date.now() + 5000;
      while (!existsSync(socket) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(findBridgeProcesses([socket])).toEqual([child.pid]);
      expect(findBridgeProcesses([join(dir, 'other.sock')])).toEqual([]);
      expect(findBridgeProcesses([])).toEqual([]);
    } finally {
      child.kill();
    }
  });
});

describe('verify --require-sandbox', () => {
  const receipt = (id: string, extra: Record<string, unknown>) =>
    ({
      receipt_id: id,
      step_name: 'v',
      command: 'npm test',
      exit_code: 0,
      completed_at: '2026-01-01T00:00:00Z',
      ...extra,
    }) as unknown as ValidationReceipt;
  const tasks = (...rs: ValidationReceipt[]) =>
    [{ taskId: 't', receipts: rs.map((r) => ({ receipt: r, valid: true })) }] as unknown as CheckedTask[];
  const policy = (t: CheckedTask[]) =>
    evaluatePolicies(t, { requireSteps: [], requirePass: false, requireSandbox: true, allowEmpty: true }).find(
      (p) => p.policy === 'require-sandbox',
    )!;

  it('counts only receipts that sign execution_mode sandbox', () => {
    expect(policy(tasks(receipt('rcpt-1', { message_version: 3, execution_mode: 'sandbox' }))).ok).toBe(true);
    const mixed = policy(
      tasks(
        receipt('rcpt-1', { message_version: 3, execution_mode: 'sandbox' }),
        receipt('rcpt-2', { message_version: 3, execution_mode: 'local' }),
        receipt('rcpt-3', { message_version: 2, execution_mode: 'sandbox' }),
      ),
    );
    expect(mixed.ok).toBe(false);
    expect(mixed.detail).toBe('2 receipts not made in the sandbox: rcpt-2 (local), rcpt-3 (version 2: no mode signed)');
    const none = policy(tasks());
    expect(none.ok).toBe(false);
    expect(none.detail).toBe('no valid receipts to check');
  });
});

describe('verify --require-pristine', () => {
  const receipt = (id: string, extra: Record<string, unknown>) =>
    ({
      receipt_id: id,
      step_name: 'v',
      command: 'npm test',
      exit_code: 0,
      completed_at: '2026-01-01T00:00:00Z',
      ...extra,
    }) as unknown as ValidationReceipt;
  const tasks = (...rs: ValidationReceipt[]) =>
    [{ taskId: 't', receipts: rs.map((r) => ({ receipt: r, valid: true })) }] as unknown as CheckedTask[];
  const policy = (t: CheckedTask[]) =>
    evaluatePolicies(t, { requireSteps: [], requirePass: false, requirePristine: true, allowEmpty: true }).find(
      (p) => p.policy === 'require-pristine',
    )!;

  it('counts only receipts that sign validation_tree pristine', () => {
    expect(policy(tasks(receipt('rcpt-1', { message_version: 4, validation_tree: 'pristine' })))).toMatchObject({
      ok: true,
      name: '--require-pristine',
    });
    const mixed = policy(
      tasks(
        receipt('rcpt-1', { message_version: 4, validation_tree: 'pristine' }),
        receipt('rcpt-2', { message_version: 4, validation_tree: 'worktree' }),
        receipt('rcpt-3', { message_version: 3, validation_tree: 'pristine' }),
      ),
    );
    expect(mixed.ok).toBe(false);
    expect(mixed.detail).toBe('2 receipts not run on a pristine tree: rcpt-2 (worktree tree), rcpt-3 (version 3: no tree signed)');
    expect(policy(tasks())).toMatchObject({ ok: false, detail: 'no valid receipts to check' });
  });
});

describe('a launch that signals when its command begins', () => {
  // The seam the sandbox uses (Launch.signalsStart), driven by a plain shell that plays the
  // sandbox: it writes on fd 3 once "set up", or fails first with bubblewrap's kind of message.
  function playing(script: string, count: string): { executor: ProcessExecutor; finished: () => number } {
    let done = 0;
    const executor: ProcessExecutor = {
      mode: 'sandbox',
      prepare: (spec) =>
        Promise.resolve({
          command: '/bin/sh',
          args: ['-c', `echo try >> ${count}; ${script}`],
          shell: false,
          env: spec.env,
          signalsStart: true,
          finished: () => void done++,
        }),
    };
    return { executor, finished: () => done };
  }
  const attempts = (count: string) => readFileSync(count, 'utf8').split('\n').filter(Boolean).length;

  it('starts again only while the set-up failed, at most SETUP_ATTEMPTS times, and shows the last failure once', async () => {
    const dir = tempDir('atlas-start-');
    const count = join(dir, 'count');
    const failing = playing('echo "bwrap: Can\'t bind mount x" >&2; exit 1', count);
    const seen: string[] = [];
    const result = await runProcess({
      command: 'true',
      cwd: dir,
      capture: true,
      groups: new ProcessGroups(),
      executor: failing.executor,
      onStderr: (c) => seen.push(c.toString()),
    });
    expect(result.exitCode).toBe(1);
    expect(attempts(count)).toBe(SETUP_ATTEMPTS);
    expect(failing.finished()).toBe(SETUP_ATTEMPTS);
    expect(result.stderr.toString()).toBe("bwrap: Can't bind mount x\n");
    expect(seen).toEqual(["bwrap: Can't bind mount x\n"]);

    const second = join(dir, 'second');
    const flaky = playing(`if [ "$(wc -l < ${second})" -lt 2 ]; then echo "bwrap: race" >&2; exit 1; fi; printf 1 >&3; echo ran`, second);
    const ok = await runProcess({ command: 'true', cwd: dir, capture: true, groups: new ProcessGroups(), executor: flaky.executor });
    expect([ok.exitCode, ok.stdout.toString(), ok.stderr.toString()]).toEqual([0, 'ran\n', '']);
    expect(attempts(second)).toBe(2);

    // Any other failure before the sign is the command's own: not started again.
    const other = join(dir, 'other');
    const plain = await runProcess({
      command: 'true',
      cwd: dir,
      capture: true,
      groups: new ProcessGroups(),
      executor: playing('echo "no such thing" >&2; exit 2', other).executor,
    });
    expect([plain.exitCode, plain.stderr.toString(), attempts(other)]).toEqual([2, 'no such thing\n', 1]);
  });
});

// The sandboxed executor at the process level: the same command, output and exit code as local
// mode; writes only where the policy allows; the keys unreadable; network only to allowed hosts;
// a timeout stops the whole sandboxed tree.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { localExecutor } from '../src/exec/local.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { checkReadiness, trialRun } from '../src/exec/readiness.js';
import { runProcess } from '../src/exec/run-process.js';
import { createSandboxExecutor, explainDenial, innerCommand } from '../src/exec/sandbox/executor.js';
import { readLitter } from '../src/exec/sandbox/litter.js';
import type { SandboxPolicy } from '../src/exec/sandbox/policy.js';
import { atlasProtectedPaths } from '../src/exec/sandbox/policy.js';
import { resetSandbox } from '../src/exec/sandbox/runtime.js';
import { createTaskExecutor, describeExecution, readExecutionRecord } from '../src/exec/task-executor.js';
import { makeGitRepo, tempDir } from './helpers/core-fixtures.js';
import { waitFor } from './helpers/engine-fixtures.js';
import { type HostServer, startHostServer } from './helpers/host-server.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

function policyFor(worktree: string, taskDir: string, extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return {
    worktree,
    tmpdir: join(taskDir, 'tmp'),
    allow_write: [worktree, join(taskDir, 'tmp')],
    deny_write: [],
    deny_read: [],
    allowed_domains: [],
    ...extra,
  };
}

/** Whether a live process names `text` in its command line (read from /proc). */
function processesNaming(text: string): boolean {
  return readdirSync('/proc').some((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
    } catch {
      return false; // ended meanwhile
    }
  });
}

function run(executor: Parameters<typeof runProcess>[0]['executor'], cwd: string, command: string, timeoutMs?: number) {
  return runProcess({
    command,
    shell: true,
    cwd,
    capture: true,
    groups: new ProcessGroups(),
    executor,
    ...(timeoutMs ? { timeoutMs } : {}),
  });
}

describe.skipIf(skipSandbox)('sandboxed executor', () => {
  const base = tempDir('atlas-sbx-');
  const worktree = join(base, 'worktree');
  const taskDir = join(base, 'task');
  const secrets = join(base, 'home', 'keys');
  const outside = join(base, 'outside');
  let server: HostServer;
  let port = 0;

  beforeAll(async () => {
    for (const d of [worktree, taskDir, secrets, outside]) mkdirSync(d, { recursive: true });
    writeFileSync(join(secrets, 'master.key'), 'SECRET-KEY-MATERIAL', { mode: 0o600 });
    writeFileSync(join(outside, 'readable.txt'), 'public');
    server = await startHostServer('hello from the host');
    port = server.port;
  });
  afterAll(async () => {
    await resetSandbox();
    await server.close();
  });

  it('gives the same output and exit code as local mode, in the same directory', async () => {
    const command = 'pwd; echo out; echo err >&2; printf "%s" "$0"; exit 3';
    const local = await run(localExecutor, worktree, command);
    const sandboxed = await run(createSandboxExecutor(policyFor(worktree, taskDir), taskDir), worktree, command);
    expect(sandboxed.exitCode).toBe(3);
    expect(sandboxed.exitCode).toBe(local.exitCode);
    expect(sandboxed.stdout.toString()).toBe(local.stdout.toString());
    expect(sandboxed.stderr.toString()).toBe(local.stderr.toString());
    // Commands given as a program and arguments too.
    const argv = await runProcess({
      command: 'printf',
      args: ['%s|', 'a b', "it's"],
      cwd: worktree,
      capture: true,
      groups: new ProcessGroups(),
      executor: createSandboxExecutor(policyFor(worktree, taskDir), taskDir),
    });
    expect(argv.stdout.toString()).toBe("a b|it's|");
  });

  it("writes inside the worktree and the task temp folder, never outside; TMPDIR is the task's", async () => {
    const executor = createSandboxExecutor(policyFor(worktree, taskDir), taskDir);
    const result = await run(
      executor,
      worktree,
      `echo data > inside.txt && echo t > "$TMPDIR/t.txt" && echo "$TMPDIR" && (echo x > ${outside}/written.txt || echo DENIED)`,
    );
    expect(result.exitCode).toBe(0);
    expect(readFileSync(join(worktree, 'inside.txt'), 'utf8')).toBe('data\n');
    expect(result.stdout.toString()).toContain(join(taskDir, 'tmp'));
    expect(existsSync(join(taskDir, 'tmp', 't.txt'))).toBe(true);
    expect(result.stdout.toString()).toContain('DENIED');
    expect(existsSync(join(outside, 'written.txt'))).toBe(false);
    // A failure the policy caused names the policy.
    const failed = await run(executor, worktree, `echo x > ${outside}/written.txt`);
    expect(failed.exitCode).not.toBe(0);
    expect(failed.sandboxNote).toContain('sandbox policy: writes are allowed only in');
    expect(failed.sandboxNote).toContain('execution.sandbox.allow_write');
  });

  it('cannot read a denied folder (the signing key), while other files stay readable', async () => {
    const executor = createSandboxExecutor(policyFor(worktree, taskDir, { deny_read: [secrets] }), taskDir);
    const result = await run(executor, worktree, `cat ${outside}/readable.txt; cat ${secrets}/master.key`);
    expect(result.stdout.toString()).toContain('public');
    expect(result.stdout.toString()).not.toContain('SECRET-KEY-MATERIAL');
    expect(result.stderr.toString()).not.toContain('SECRET-KEY-MATERIAL');
    expect(result.exitCode).not.toBe(0);
    expect(result.sandboxNote).toContain(`${secrets} is unreadable in the sandbox`);
  });

  it('reaches only allowed hosts: a server on 127.0.0.1 is refused, then allowed by name', async () => {
    const url = `http://127.0.0.1:${port}/`;
    const fetchIt = `node -e "fetch('${url}').then(r => r.text()).then(t => console.log('GOT', t), e => { console.log('FAILED', e.cause?.code ?? e.message); process.exit(7) })"`;
    const curl = `curl -sS --max-time 5 ${url}`;
    const denied = await run(createSandboxExecutor(policyFor(worktree, taskDir), taskDir), worktree, `${curl}; echo rc=$?`);
    expect(denied.stdout.toString()).not.toContain('hello from the host');
    const allowed = await run(
      createSandboxExecutor(policyFor(worktree, taskDir, { allowed_domains: [`127.0.0.1:${port}`] }), taskDir),
      worktree,
      curl,
    );
    expect(allowed.exitCode).toBe(0);
    expect(allowed.stdout.toString()).toBe('hello from the host');
    // Without a proxy-aware client the network namespace has no way out at all.
    const direct = await run(
      createSandboxExecutor(policyFor(worktree, taskDir, { allowed_domains: [`127.0.0.1:${port}`] }), taskDir),
      worktree,
      fetchIt,
    );
    expect(direct.stdout.toString()).not.toContain('hello from the host');
  });

  it('a timeout stops the whole sandboxed tree', async () => {
    const marker = join(worktree, 'late.txt');
    const started = Date.now();
    const result = await run(
      createSandboxExecutor(policyFor(worktree, taskDir), taskDir),
      worktree,
      `(sleep 2; echo late > ${marker}) & sleep 30`,
      600,
    );
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(124);
    // Well before `sleep 30` could end (a bound a loaded machine cannot reach): the timeout ended it.
    expect(Date.now() - started).toBeLessThan(20_000);
    // Once no process of the tree is left (each names the marker in its command line), none can write it.
    await waitFor(() => !processesNaming(marker), 20_000, 'the sandboxed tree to be gone');
    expect(existsSync(marker)).toBe(false);
  });

  it('starts a command again when the sandbox failed in its own set-up (a bound file replaced meanwhile), and only then', async () => {
    // The task's own files are bound one by one under a hidden parent; atlas replaces HOOK.md by
    // rename while a step runs. Here a process does so without pause.
    const hidden = join(base, 'home-race', 'tasks');
    const ownDir = join(hidden, 't1');
    mkdirSync(ownDir, { recursive: true });
    const brief = join(ownDir, 'HOOK.md');
    writeFileSync(brief, 'brief\n');
    const churn = spawn(
      process.execPath,
      [
        '-e',
        `const fs=require('fs');for(;;){fs.writeFileSync(${JSON.stringify(brief)}+'.n','brief\\n');fs.renameSync(${JSON.stringify(brief)}+'.n',${JSON.stringify(brief)});}`,
      ],
      { stdio: 'ignore' },
    );
    const executor = createSandboxExecutor(policyFor(worktree, ownDir, { deny_read: [hidden], allow_read: [brief] }), ownDir);
    try {
      const results = [];
      for (let i = 0; i < 60; i++) results.push(await run(executor, worktree, `cat ${brief}`));
      expect(results.filter((r) => r.exitCode !== 0).map((r) => r.stderr.toString())).toEqual([]);
      expect(results.every((r) => r.stdout.toString() === 'brief\n')).toBe(true);
    } finally {
      churn.kill();
      await executor.close?.();
    }
    // A command that only says what bubblewrap says ran: it is not started again.
    const count = join(worktree, 'ran.txt');
    const mimic = await run(executor, worktree, `echo ran >> ${count}; echo "bwrap: Can't bind mount" >&2; exit 1`);
    expect(mimic.exitCode).toBe(1);
    expect(mimic.stderr.toString()).toBe("bwrap: Can't bind mount\n");
    expect(readFileSync(count, 'utf8')).toBe('ran\n');
    // Output streams as the command writes it, not held until it ends.
    const seen: number[] = [];
    const begun = Date.now();
    const streamed = await runProcess({
      command: 'echo first; sleep 1; echo second',
      shell: true,
      cwd: worktree,
      groups: new ProcessGroups(),
      executor,
      onStdout: () => seen.push(Date.now() - begun),
    });
    expect(streamed.exitCode).toBe(0);
    expect(seen.length).toBe(2);
    expect(seen[1]! - seen[0]!).toBeGreaterThan(500);
  });

  it('records what a kill would leave before the command starts, and removes the stubs after a normal end', async () => {
    const executor = createSandboxExecutor(policyFor(worktree, taskDir), taskDir);
    const result = await run(executor, worktree, `cat ${join(taskDir, 'sandbox-litter.json')}`);
    const during = JSON.parse(result.stdout.toString());
    expect(during.pid).toBe(process.pid);
    expect(during.stubs).toContain(join(worktree, '.bashrc'));
    expect(during.stubs).toContain(join(worktree, '.claude'));
    expect(during.sockets.length).toBeGreaterThan(0);
    expect(existsSync(join(worktree, '.bashrc'))).toBe(false);
    expect(existsSync(join(worktree, '.claude'))).toBe(false);
    expect(readLitter(taskDir)?.pid).toBe(process.pid);
    await executor.close?.();
  });

  it('re-wraps when a protected path appears before a step, and keeps it read-only', async () => {
    const tree = join(base, 'rewrap');
    mkdirSync(tree);
    const executor = createSandboxExecutor(policyFor(tree, taskDir), taskDir);
    expect((await run(executor, tree, 'true')).exitCode).toBe(0);
    mkdirSync(join(tree, '.vscode'));
    writeFileSync(join(tree, '.vscode', 'settings.json'), '{}');
    // The worktree is scanned once per step (test/exec-sandbox-scan.test.ts): the next step sees it.
    executor.beginStep?.();
    const second = await run(executor, tree, 'cat .vscode/settings.json; echo x > .vscode/settings.json || echo PROTECTED');
    expect(second.stdout.toString()).toBe('{}PROTECTED\n');
    expect(readFileSync(join(tree, '.vscode', 'settings.json'), 'utf8')).toBe('{}');
    await executor.close?.();
  });

  it("keeps .atlas/ (atlas's configuration) read-only in a task that runs in the repository itself", async () => {
    const repo = makeGitRepo();
    const executor = createSandboxExecutor(policyFor(repo, taskDir, { deny_write: atlasProtectedPaths(repo) }), taskDir);
    const result = await run(
      executor,
      repo,
      'mkdir -p .atlas && echo "lifecycle: evil" > .atlas/config.yaml || echo PROTECTED; git status --porcelain',
    );
    expect(result.stdout.toString()).toContain('PROTECTED');
    expect(existsSync(join(repo, '.atlas'))).toBe(false);
    await executor.close?.();
  });

  it('a task run in sandbox mode: readiness, the trial run, the executor with its recorded policy', async () => {
    const home = join(base, 'atlas-home');
    const taskDir = join(home, 'workspaces', 'ws', 'tasks', 't1');
    mkdirSync(taskDir, { recursive: true });
    const { config } = await loadConfig({ home, env: {}, overrides: { 'execution.mode': 'sandbox', 'ai.agent': 'command' } });
    expect((await checkReadiness()).ready).toBe(true);
    const trial = await trialRun();
    expect(trial.ok).toBe(true);
    const run = await createTaskExecutor({ task: { id: 't1', worktree, workspace_id: 'ws' }, taskDir, home, config });
    expect(run.executor.mode).toBe('sandbox');
    expect(describeExecution(run.record)).toContain('steps run in the sandbox: writes only in the worktree');
    expect(readExecutionRecord(taskDir)?.policy?.deny_read).toContain(join(home, 'keys'));
    const result = await runProcess({
      command: 'echo "$TMPDIR"',
      shell: true,
      cwd: worktree,
      capture: true,
      groups: new ProcessGroups(),
      executor: run.executor,
    });
    expect(result.stdout.toString().trim()).toBe(join(taskDir, 'tmp'));
    await run.release();
    expect(existsSync(join(taskDir, 'sandbox-litter.json'))).toBe(false);
    // A program that does not exist is an error of the start, as in local mode.
    await expect(runProcess({ command: join(base, 'no-such-program'), cwd: worktree, groups: new ProcessGroups() })).rejects.toThrow(
      /ENOENT/,
    );
  });

  it('explains network and write denials in policy terms, and stays quiet otherwise', () => {
    const policy = policyFor('/w', '/t', { allowed_domains: ['api.example.com'] });
    expect(explainDenial('curl: (56) CONNECT tunnel failed, response 403 Forbidden', policy)).toContain(
      'network access is limited to api.example.com',
    );
    expect(explainDenial('error: something else', policy)).toBeUndefined();
    expect(innerCommand({ command: 'x', args: [], shell: true }, { ...policy, allowed_domains: ['localhost:8080'] })).toContain(
      'NO_PROXY=',
    );
    expect(innerCommand({ command: 'x', args: [], shell: true }, policy)).not.toContain('NO_PROXY=');
  });
});

// The exec room's parts on their own: the litter record and sweep rules, socat bridges, the
// --require-sandbox and --require-pristine policies, and a launch that signals when its command begins.
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findExecutable } from '../src/agent/find-executable.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import type { CheckedTask } from '../src/domain/receipt-policy.js';
import { evaluatePolicies } from '../src/domain/receipt-policy.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
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
import { findBridgeProcesses } from '../src/exec/sandbox/socat.js';
import type { ProcessExecutor } from '../src/exec/types.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

function stub(path: string): void {
  writeFileSync(path, '');
  chmodSync(path, 0o444);
}

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

/** A receipt as `atlas verify` checked it (valid signature), with the fields a policy reads. */
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
/** One policy's verdict on the tasks, with only `flags` required. */
const policyOf = (flags: Record<string, boolean>, name: string) => (t: CheckedTask[]) =>
  evaluatePolicies(t, { requireSteps: [], requirePass: false, allowEmpty: true, ...flags }).find((p) => p.policy === name)!;

describe('verify --require-sandbox', () => {
  const policy = policyOf({ requireSandbox: true }, 'require-sandbox');

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
  const policy = policyOf({ requirePristine: true }, 'require-pristine');

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

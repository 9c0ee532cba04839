// Receipts prove which commands ran (issue 8): --require-command, the repository's committed
// validation.commands, "nothing to verify", future times, version-3 messages with the executable,
// and validation commands fixed when a task starts.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { masterFromSeed } from '../src/crypto/hd.js';
import { HDReceiptSigner } from '../src/crypto/hd-signer.js';
import { readMasterSeed } from '../src/crypto/key-files.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import { DEFAULT_KEY_DERIVATION, receiptFormatProblems, receiptMessage } from '../src/domain/receipt.js';
import { commandExecutable } from '../src/engine/command-executable.js';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, git, onlyTask, sandbox, writeFiles } from './helpers/engine-fixtures.js';
import { createTask, homeWithKey, repo } from './helpers/receipt-fixtures.js';

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

const REPO_CONFIG = 'validation:\n  commands: ["node -e \\"console.log(42)\\""]\n';

async function bundleOf(s: Sandbox): Promise<string> {
  const out = join(s.base, 'receipts.json');
  const r = await atlas(s, ['receipts', 'export', '--out', out]);
  expect(r.code, r.stderr).toBe(0);
  return out;
}

describe('receipts prove which commands ran', () => {
  it('receipts of `-c validation.commands=["true"]` fail the repository\'s committed policy and --require-command', async () => {
    sb = sandbox({ '.atlas/config.yaml': REPO_CONFIG });
    const start = await atlas(sb, ['start', 'check', '-c', 'validation.commands=["true"]']);
    expect(start.code, start.stderr).toBe(0);
    const { hook, task } = onlyTask(sb);
    expect(task.validation_commands).toEqual(['true']);
    expect(hook.receipts.map((r: ValidationReceipt) => [r.command, r.message_version, r.executable, r.execution_mode])).toEqual([
      ['true', 4, '', 'local'],
    ]);
    const bundle = await bundleOf(sb);
    const base = ['verify', bundle, '--require-step', 'validate', '--require-pass', '--commit', 'HEAD'];

    const strict = await atlas(sb, base);
    expect(strict.code, strict.stdout).toBe(1);
    expect(strict.stdout).toContain(
      `"node -e \\"console.log(42)\\"" (.atlas/config.yaml at ${git(sb.repo, 'rev-parse', 'HEAD').slice(0, 12)})`,
    );
    expect(strict.stdout).toContain('receipts are for `true`');

    expect((await atlas(sb, [...base, '--no-repo-policy'])).code).toBe(0);
    expect((await atlas(sb, [...base, '--no-repo-policy', '--require-command', 'true'])).code).toBe(0);
    const other = await atlas(sb, [...base, '--no-repo-policy', '--require-command', 'npm test']);
    expect(other.code).toBe(1);
    expect(other.stdout).toContain('no valid receipt of `npm test`');

    // The policy is the file as committed: an uncommitted edit to it changes nothing.
    writeFiles(sb.repo, { '.atlas/config.yaml': 'validation:\n  commands: ["true"]\n' });
    expect((await atlas(sb, base)).code).toBe(1);
  });

  it("the repository's commands, run for real, satisfy its policy; --json lists each policy", async () => {
    sb = sandbox({ '.atlas/config.yaml': REPO_CONFIG });
    expect((await atlas(sb, ['start', 'check'])).code).toBe(0);
    const bundle = await bundleOf(sb);
    const r = await atlas(sb, [
      '--json',
      'verify',
      bundle,
      '--require-pass',
      '--commit',
      'HEAD',
      '--require-command',
      'node -e "console.log(42)"',
    ]);
    expect(r.code, r.stdout).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.policies.filter((p: any) => p.policy === 'require-command').map((p: any) => p.ok)).toEqual([true, true]);
    expect(report.tasks[0].receipts[0]).toMatchObject({
      message_version: 4,
      execution_mode: 'local',
      validation_tree: 'worktree',
      dependencies: 'worktree',
      executable: expect.stringMatching(/\/node$/),
    });
  });

  it('a bundle with no receipts is "nothing to verify" (exit 1) unless --allow-empty', async () => {
    sb = sandbox({ 'package.json': JSON.stringify({ name: 'x', scripts: { test: 'node -e 0' } }) });
    expect((await atlas(sb, ['start', 'check'])).code).toBe(0);
    const bundle = JSON.parse(readFileSync(await bundleOf(sb), 'utf8'));
    for (const tasks of [[], bundle.tasks.map((t: any) => ({ ...t, receipts: [] }))]) {
      const path = join(sb.base, 'empty.json');
      writeFileSync(path, JSON.stringify({ ...bundle, tasks }));
      const r = await atlas(sb, ['verify', path]);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('nothing to verify');
      expect((await atlas(sb, ['verify', path, '--allow-empty'])).code).toBe(0);
    }
  });

  it("validation commands given with -c are the ones a resumed task runs, not today's configuration", async () => {
    sb = sandbox({
      '.atlas/config.yaml': REPO_CONFIG,
      '.atlas/templates/gate.yaml':
        'name: gate\nworktree: false\nsteps:\n  - name: approve\n    type: human\n    prompt: go on?\n  - name: validate\n    type: validation\n',
    });
    const start = await atlas(sb, ['start', 'gate', 'x', '--no-interactive', '-c', 'validation.commands=["echo from-the-flag"]']);
    expect(start.code, start.stderr).toBe(5);
    const resume = await atlas(sb, ['resume', '--approve', '--no-interactive']);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout).toContain('from-the-flag');
    expect(onlyTask(sb).hook.receipts.map((r: ValidationReceipt) => r.command)).toEqual(['echo from-the-flag']);
  });
});

describe('receipt times and version 3', () => {
  it('a receipt dated more than 5 minutes ahead fails verification; within the skew it passes', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    const signer = new HDReceiptSigner(masterFromSeed(readMasterSeed(home)), DEFAULT_KEY_DERIVATION);
    const at = (ms: number) => new Date(Date.now() + ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const receipt = (i: number, completed: string): ValidationReceipt =>
      signer.sign(
        {
          receipt_id: `rcpt-0000000${i}`,
          step_name: 'validate',
          command: 'npm test',
          exit_code: 0,
          started_at: at(-60_000),
          completed_at: completed,
          duration: '1s',
          stdout_hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', // gitleaks:allow
          stderr_hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', // gitleaks:allow
          message_version: 3,
          task_id: fx.ref.id,
          git_dirty: false,
          executable: '/usr/bin/npm',
          execution_mode: 'local',
        },
        { taskIndex: fx.task.task_index!, receiptIndex: i },
      );
    await fx.manager.update((hook) => ({ ...hook, receipts: [receipt(0, at(60_000)), receipt(1, at(3_600_000))] }));
    const { atlas: run } = await import('./helpers/receipt-fixtures.js');
    const r = await run(['verify', fx.ref.id, '--no-repo-policy'], { home });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/completed_at \S+ is 60 min in the future \(more than the 5 min allowed for clock skew\)/);
    expect(r.stdout).toContain('1 invalid');
  });

  it('the v3 message appends executable and execution mode; their format is checked', () => {
    const v3 = {
      receipt_id: 'rcpt-0000abcd',
      step_name: 'validate',
      command: 'npm test',
      exit_code: 0,
      started_at: '2026-01-17T14:35:00Z',
      completed_at: '2026-01-17T14:35:12Z',
      duration: '12s',
      stdout_hash: 'a'.repeat(64),
      stderr_hash: 'b'.repeat(64),
      message_version: 3 as const,
      task_id: 'task-20260117-143022',
      git_commit: 'c'.repeat(40),
      git_dirty: false,
      executable: '/usr/bin/npm',
      execution_mode: 'local' as const,
    };
    expect(receiptMessage(v3)).toBe(
      `rcpt-0000abcd|npm test|0|${'a'.repeat(64)}|${'b'.repeat(64)}|1768660512|task-20260117-143022|validate|${'c'.repeat(40)}|false|/usr/bin/npm|local`,
    );
    expect(receiptMessage({ ...v3, executable: '' })).toMatch(/\|false\|\|local$/);
    const fields = (over: object) => receiptFormatProblems({ ...v3, ...over } as unknown as ValidationReceipt).map((p) => p.field);
    expect(fields({ executable: 'npm' })).toEqual(['executable']);
    expect(fields({ executable: '/usr/bin/np|m' })).toEqual(['executable']);
    expect(fields({ executable: undefined })).toEqual(['executable']);
    expect(fields({ execution_mode: 'cloud' })).toEqual(['execution_mode']);
    expect(fields({ message_version: 5 })).toContain('message_version');
  });

  it('the v4 message appends the validation tree and the dependency source; their format is checked', () => {
    const v4 = {
      receipt_id: 'rcpt-0000abcd',
      step_name: 'validate',
      command: 'npm test',
      exit_code: 0,
      started_at: '2026-01-17T14:35:00Z',
      completed_at: '2026-01-17T14:35:12Z',
      duration: '12s',
      stdout_hash: 'a'.repeat(64),
      stderr_hash: 'b'.repeat(64),
      message_version: 4 as const,
      task_id: 'task-20260117-143022',
      git_commit: 'c'.repeat(40),
      git_dirty: false,
      executable: '/usr/bin/npm',
      execution_mode: 'sandbox' as const,
      validation_tree: 'pristine' as const,
      dependencies: `setup:${'d'.repeat(64)}`,
    };
    expect(receiptMessage(v4)).toMatch(new RegExp(`\\|false\\|/usr/bin/npm\\|sandbox\\|pristine\\|setup:${'d'.repeat(64)}$`));
    const fields = (over: object) => receiptFormatProblems({ ...v4, ...over } as unknown as ValidationReceipt).map((p) => p.field);
    expect(fields({})).toEqual([]);
    for (const ok of ['worktree', 'repository', 'none']) expect(fields({ dependencies: ok })).toEqual([]);
    expect(fields({ dependencies: 'setup:abc' })).toEqual(['dependencies']);
    expect(fields({ dependencies: 'none|x' })).toEqual(['dependencies']);
    expect(fields({ validation_tree: 'fresh' })).toEqual(['validation_tree']);
    expect(fields({ validation_tree: undefined, dependencies: undefined })).toEqual(['validation_tree', 'dependencies']);
  });

  it('commandExecutable names the program the shell starts, "" for its own builtins', () => {
    const dir = repo();
    writeFileSync(join(dir, 'npm'), '#!/bin/sh\necho fake\n', { mode: 0o755 });
    const env = { PATH: `${dir}:/usr/bin:/bin` };
    expect(commandExecutable('npm test', { cwd: '/', env })).toBe(join(dir, 'npm'));
    expect(commandExecutable('CI=1 FOO="a b" npm test', { cwd: '/', env })).toBe(join(dir, 'npm'));
    expect(commandExecutable('./npm run', { cwd: dir, env: {} })).toBe(join(dir, 'npm'));
    expect(commandExecutable('"npm" test', { cwd: '/', env })).toBe(join(dir, 'npm'));
    for (const builtin of ['true', 'echo hi', 'cd x && make', '(npm test)', '$NPM test', 'no-such-program-here x', '']) {
      expect(commandExecutable(builtin, { cwd: '/', env })).toBe('');
    }
  });
});

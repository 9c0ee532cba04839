import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { masterFromSeed } from '../src/crypto/hd.js';
import { HDReceiptSigner } from '../src/crypto/hd-signer.js';
import { readMasterSeed } from '../src/crypto/key-files.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import { DEFAULT_KEY_DERIVATION } from '../src/domain/receipt.js';
import type { ReceiptBundle } from '../src/receipts/bundle.js';
import { atlas, commitChange, createTask, git, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';
import { exported, rewrite } from './helpers/verify-cli-fixtures.js';

describe('atlas receipts export + atlas verify', () => {
  it('passes on the validated clean commit and fails once the tree has moved on', async () => {
    const { home, xpub, fingerprint } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { step: 'validate', command: 'npm test' });
    const { path, bundle } = await exported(home, fx.ref.id);
    expect(bundle).toMatchObject({
      format: 'atlas-receipt-bundle',
      version: 1,
      xpub,
      xpub_fingerprint: fingerprint,
      key_derivation: DEFAULT_KEY_DERIVATION,
    });
    expect(bundle.tasks[0]).toMatchObject({ task_id: fx.ref.id, task_index: fx.task.task_index });
    expect(bundle.artifacts.map((a) => a.stream)).toEqual(['stdout', 'stderr']);

    const args = ['verify', path, '--xpub', xpub, '--require-step', 'validate', '--commit', 'HEAD'];
    const ok = await atlas(args, { home: tempDir(), cwd: dir });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain('OK: 1 receipt');

    commitChange(dir);
    const moved = await atlas(args, { home: tempDir(), cwd: dir });
    expect(moved.code).toBe(1);
    expect(moved.stdout).toContain('✗ --commit');
    expect(moved.stdout).toContain('receipts made on other commits');
  });

  it('says "valid signature, command failed" for a failing command\'s receipt, and never OK without --require-pass', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { step: 'validate', command: 'npm test', exitCode: 1 });
    const { path } = await exported(home, fx.ref.id);
    const run = await atlas(['verify', path, '--xpub', xpub], { home: tempDir(), cwd: dir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^ {2}! .*npm test \(valid signature, command failed: exit 1/m);
    expect(run.stdout).not.toMatch(/✓ .*npm test/);
    expect(run.stdout).toContain(
      'SIGNATURES VALID, COMMANDS FAILED: 1 receipt in 1 task, 1 valid (1 valid signature, command failed), 0 invalid',
    );
    expect(run.stdout).not.toMatch(/^OK/m);
    const strict = await atlas(['verify', path, '--xpub', xpub, '--require-pass'], { home: tempDir(), cwd: dir });
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/^FAILED/m);
  });

  it('accepts a bundle committed after the commit it proves, as long as nothing else changed', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { step: 'validate' });
    const validated = git(dir, 'rev-parse', 'HEAD');
    const bundlePath = join(dir, '.atlas', 'receipts.json');
    const out = await atlas(['receipts', 'export', '--out', bundlePath], { home, cwd: dir });
    expect(out.code, out.stderr).toBe(0);
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'receipts');
    const args = ['verify', '.atlas/receipts.json', '--xpub', xpub, '--require-step', 'validate', '--commit', 'HEAD'];
    const ok = await atlas(args, { home: tempDir(), cwd: dir });
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toContain(`made on ${validated.slice(0, 12)}, whose tree differs only in .atlas/receipts.json`);

    // A shallow clone without the validated commit cannot compare: it says how to fix that.
    const shallow = tempDir('atlas-clone-');
    git(shallow, 'clone', '-q', '--depth', '1', `file://${dir}`, 'c');
    const cut = await atlas(args, { home: tempDir(), cwd: join(shallow, 'c') });
    expect(cut.code).toBe(1);
    expect(cut.stdout).toContain('fetch-depth');

    // Code changed along with the bundle: the receipts no longer prove this commit.
    writeFileSync(join(dir, 'README.md'), 'changed after validation\n');
    writeFileSync(bundlePath, readFileSync(bundlePath, 'utf8').replace('"version": 1', '"version":  1'));
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'sneak a change in');
    const sneaky = await atlas(args, { home: tempDir(), cwd: dir });
    expect(sneaky.code).toBe(1);
    expect(sneaky.stdout).toContain('receipts made on other commits');
  });

  it('does not count receipts made on a dirty tree for --commit', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    writeFileSync(join(dir, 'README.md'), 'uncommitted\n');
    await recordRun(fx);
    const { path } = await exported(home, fx.ref.id);
    const result = await atlas(['verify', path, '--xpub', xpub, '--commit', git(dir, 'rev-parse', 'HEAD')], { home: tempDir(), cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('uncommitted changes');
  });

  it('--require-pass checks the last run of each command', async () => {
    const { home, xpub } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test', exitCode: 1 });
    await recordRun(fx, { command: 'npm run lint', exitCode: 0 });
    let result = await atlas(['verify', fx.ref.id, '--xpub', xpub, '--require-pass'], { home });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/`npm test` exited 1/);
    await recordRun(fx, { command: 'npm test', exitCode: 0 });
    result = await atlas(['verify', fx.ref.id, '--xpub', xpub, '--require-pass', '--require-step', 'validate'], { home });
    expect(result.code, result.stdout).toBe(0);
  });

  it('rejects tampered, moved and copied receipts in a bundle, naming each and why', async () => {
    const { home, xpub } = await homeWithKey();
    const a = await createTask(home, repo());
    const b = await createTask(home, repo());
    await recordRun(a, { command: 'npm test' });
    await recordRun(a, { command: 'npm run lint' });
    await recordRun(b, { command: 'npm test' });
    const { path } = await exported(home, a.ref.id, b.ref.id);
    expect((await atlas(['verify', path, '--xpub', xpub], { home: tempDir() })).code).toBe(0);

    const cases: Array<[string, (x: ReceiptBundle) => void, RegExp]> = [
      [
        'exit code',
        (x) => {
          x.tasks[0]!.receipts[0]!.exit_code = 3;
        },
        /signature does not match/,
      ],
      [
        'command',
        (x) => {
          x.tasks[0]!.receipts[1]!.command = 'true';
        },
        /signature does not match/,
      ],
      [
        'git_dirty',
        (x) => {
          x.tasks[0]!.receipts[1]!.git_dirty = true;
        },
        /signature does not match/,
      ],
      ['swapped', (x) => void x.tasks[0]!.receipts.reverse(), /key_path .* is not m\/44'\/236'\/0'\/\d+\/0/],
      ['copied', (x) => void x.tasks[1]!.receipts.push(x.tasks[0]!.receipts[1]!), /made for task .*copied/],
      [
        'task index',
        (x) => {
          x.tasks[1]!.task_index = x.tasks[0]!.task_index;
        },
        /also claimed by/,
      ],
      [
        'signature',
        (x) => {
          x.tasks[0]!.receipts[0]!.signature = x.tasks[0]!.receipts[1]!.signature;
        },
        /signature does not match/,
      ],
      [
        'hash format',
        (x) => {
          x.tasks[0]!.receipts[0]!.stdout_hash = 'a1b2c3d4e5f6...';
        },
        /stdout_hash must be 64/,
      ],
    ];
    for (const [name, change, why] of cases) {
      const result = await atlas(['verify', rewrite(path, change), '--xpub', xpub], { home: tempDir() });
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toMatch(why);
      expect(result.stdout, name).toMatch(/✗ (rcpt-[0-9a-f]{8}|task index)/);
    }
  });

  it('checks artifact files of a task and of a hook.json, and verifies the task of this directory', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    const receipt = await recordRun(fx, { stdout: 'all tests passed\n' });
    expect((await atlas(['verify', fx.ref.id], { home })).code).toBe(0);
    const here = await atlas(['verify'], { home, cwd: dir });
    expect(here.code, here.stderr).toBe(0);
    expect(here.stdout).toContain(fx.ref.id);

    writeFileSync(join(fx.ref.dir, receipt.stdout_artifact!), 'all tests passed (really)\n');
    for (const input of [fx.ref.id, join(fx.ref.dir, 'hook.json')]) {
      const result = await atlas(['verify', input], { home });
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('stdout changed');
    }
    // A bundle checks artifacts only when told where they are.
    const { path } = await exported(home, fx.ref.id);
    expect((await atlas(['verify', path], { home })).code).toBe(0);
    expect((await atlas(['verify', path, '--artifacts', fx.ref.dir], { home })).code).toBe(1);
  });

  it('verifies version-1 receipts but does not count them for --require-step', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    const signer = new HDReceiptSigner(masterFromSeed(readMasterSeed(home)), DEFAULT_KEY_DERIVATION);
    const v1: ValidationReceipt = signer.sign(
      {
        receipt_id: 'rcpt-00000001',
        step_name: 'validate',
        command: 'magex lint',
        exit_code: 0,
        started_at: '2026-01-17T14:35:00Z',
        completed_at: '2026-01-17T14:35:12Z',
        duration: '12.3s',
        stdout_hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', // gitleaks:allow
        stderr_hash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', // gitleaks:allow
      },
      { taskIndex: fx.task.task_index!, receiptIndex: 0 },
    );
    await fx.manager.update((hook) => ({ ...hook, receipts: [v1] }));
    const plain = await atlas(['verify', fx.ref.id], { home });
    expect(plain.code, plain.stdout).toBe(0);
    expect(plain.stdout).toContain('v1');
    const strict = await atlas(['verify', fx.ref.id, '--require-step', 'validate'], { home });
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain('step name is not signed');
  });
});

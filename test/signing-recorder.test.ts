// The signing recorder the runner calls per validation command: a version-2 receipt with hashes
// of the exact bytes, the worktree's git state, the key path of its task and position, appended
// under the hook lock with a history event; HOOK.md shows real verification status.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AccountVerifier } from '../src/crypto/account-verifier.js';
import { parseAccountXpub } from '../src/crypto/hd.js';
import { DEFAULT_KEY_DERIVATION } from '../src/domain/receipt.js';
import { createReceiptStatuses } from '../src/receipts/status.js';
import { readTask } from '../src/store/task-store.js';
import { commitChange, createTask, git, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

describe('signing recorder', () => {
  it('records a signed version-4 receipt with hashes, git state, executable, the tree and artifacts', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    const stdout = Buffer.from([0x00, 0xff, 0x0a, 0x41]);
    const receipt = await recordRun(fx, { command: 'npm test', stdout, stderr: 'warn\n', exitCode: 0 });
    expect(receipt).toMatchObject({
      step_name: 'validate',
      command: 'npm test',
      exit_code: 0,
      started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      duration: '12.3s',
      stdout_hash: sha(stdout),
      stderr_hash: sha('warn\n'),
      key_path: `m/44'/236'/0'/${fx.task.task_index}/0`,
      message_version: 4,
      task_id: fx.ref.id,
      git_commit: git(dir, 'rev-parse', 'HEAD'),
      git_dirty: false,
      executable: '/usr/bin/npm',
      execution_mode: 'local',
      validation_tree: 'worktree',
      dependencies: 'worktree',
    });
    expect(receipt.receipt_id).toMatch(/^rcpt-[0-9a-f]{8}$/);
    expect(readFileSync(join(fx.ref.dir, receipt.stdout_artifact!))).toEqual(stdout);

    const hook = fx.manager.read();
    expect(hook.receipts).toEqual([receipt]);
    const event = hook.history[hook.history.length - 1]!;
    expect(event).toMatchObject({
      trigger: 'receipt_recorded',
      step_name: 'validate',
      details: { receipt_id: receipt.receipt_id, exit_code: 0 },
    });

    const verifier = new AccountVerifier(parseAccountXpub(xpub, 'xpub'), DEFAULT_KEY_DERIVATION);
    expect(verifier.verify(receipt, { taskIndex: fx.task.task_index!, receiptIndex: 0 })).toEqual([]);
  });

  it('records failing runs too, and a dirty tree as dirty', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    writeFileSync(join(dir, 'README.md'), 'edited\n');
    const receipt = await recordRun(fx, { exitCode: 2 });
    expect(receipt).toMatchObject({ exit_code: 2, git_dirty: true });
  });

  it('gives concurrent receipts distinct positions, each verifying at its index', async () => {
    const { home, xpub } = await homeWithKey();
    const fx = await createTask(home, repo());
    const receipts = await Promise.all([1, 2, 3, 4, 5].map((i) => recordRun(fx, { command: `check ${i}` })));
    const hook = fx.manager.read();
    expect(hook.receipts).toHaveLength(5);
    expect(new Set(hook.receipts.map((r) => r.key_path)).size).toBe(5);
    const verifier = new AccountVerifier(parseAccountXpub(xpub, 'xpub'), DEFAULT_KEY_DERIVATION);
    for (const [i, r] of hook.receipts.entries()) expect(verifier.verify(r, { taskIndex: hook.task_index!, receiptIndex: i })).toEqual([]);
    expect(receipts.map((r) => r.receipt_id).sort()).toEqual(hook.receipts.map((r) => r.receipt_id).sort());
  });

  it('allocates a task index for an old task without one and stores it in hook.json and task.json', async () => {
    const { home } = await homeWithKey();
    const first = await createTask(home, repo());
    const old = await createTask(home, repo(), { taskIndex: false });
    expect(old.manager.read().task_index).toBeUndefined();
    const receipt = await recordRun(old);
    const index = old.manager.read().task_index!;
    expect(index).toBeGreaterThan(first.task.task_index!);
    expect(readTask(old.ref.dir).task_index).toBe(index);
    expect(receipt.key_path).toBe(`m/44'/236'/0'/${index}/0`);
    await recordRun(old);
    expect(old.manager.read().task_index).toBe(index);
  });

  it('fails with the `atlas init` hint when there is no master key, writing nothing', async () => {
    const home = tempDir();
    const fx = await createTask(home, repo());
    await expect(recordRun(fx)).rejects.toMatchObject({ exitCode: 3, hint: expect.stringContaining('atlas init') });
    expect(fx.manager.read().receipts).toEqual([]);
  });

  it('refuses step names that would make the signed message ambiguous', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await expect(recordRun(fx, { step: 'a|b' })).rejects.toThrow(/step_name/);
    expect(fx.manager.read().receipts).toEqual([]);
  });

  it('records receipts on the commit the worktree is at', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    const a = await recordRun(fx);
    const head = commitChange(dir);
    const b = await recordRun(fx);
    expect(a.git_commit).not.toBe(head);
    expect(b.git_commit).toBe(head);
  });
});

describe('HOOK.md verification status', () => {
  it('shows real verification results, and notices changed output files', async () => {
    const { home } = await homeWithKey();
    const statuses = createReceiptStatuses(home, DEFAULT_KEY_DERIVATION);
    const fx = await createTask(home, repo(), { receiptStatuses: statuses });
    const good = await recordRun(fx, { command: 'npm test' });
    await recordRun(fx, { command: 'npm run lint' });
    let md = readFileSync(fx.manager.files.hookMarkdown, 'utf8');
    expect(md.match(/✓ verified/g)).toHaveLength(2);

    writeFileSync(join(fx.ref.dir, good.stdout_artifact!), 'forged output\n');
    await fx.manager.regenerate();
    md = readFileSync(fx.manager.files.hookMarkdown, 'utf8');
    expect(md).toContain('✗ stdout changed');
    expect(md.match(/✓ verified/g)).toHaveLength(1);

    // A hand-edited exit code breaks the signature.
    await fx.manager.update((hook) => ({
      ...hook,
      receipts: hook.receipts.map((r, i) => (i === 1 ? { ...r, exit_code: 0 === r.exit_code ? 1 : 0 } : r)),
    }));
    md = readFileSync(fx.manager.files.hookMarkdown, 'utf8');
    expect(md).toContain('✗ signature invalid');
  });

  it('says when there is no key to check with', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx);
    const statuses = createReceiptStatuses(tempDir());
    expect(await statuses(fx.manager.read(), fx.task)).toEqual(['no key to check']);
  });
});

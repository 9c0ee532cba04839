// Verification status of each receipt for HOOK.md, computed for real: signature and key path
// against the local account xpub, artifact files against their hashes. Set on CliContext as
// `ctx.receiptStatuses`; the crypto libraries load only when a hook with receipts is rendered.

import { readAccountXpubFile } from '../crypto/key-files.js';
import type { ReceiptVerifier } from '../crypto/signer.js';
import type { Hook } from '../domain/hook.js';
import type { KeyDerivation, ReceiptProblem } from '../domain/receipt.js';
import { DEFAULT_KEY_DERIVATION } from '../domain/receipt.js';
import type { Task } from '../domain/task.js';
import type { ReceiptStatusFn } from '../hook/manager.js';
import { taskDir } from '../store/paths.js';
import { ArtifactHasher, checkReceipt, statusLabel } from './check.js';

export const NO_KEY_STATUS = 'no key to check';

type DerivationSource = KeyDerivation | (() => KeyDerivation | Promise<KeyDerivation>);

export function createReceiptStatuses(home: string, derivation: DerivationSource = DEFAULT_KEY_DERIVATION): ReceiptStatusFn {
  const hasher = new ArtifactHasher();
  let cached: { key: string; verifier: ReceiptVerifier } | undefined;

  async function verifierFor(xpub: string, d: KeyDerivation): Promise<ReceiptVerifier | undefined> {
    const key = `${xpub}|${d.purpose}|${d.coin_type}|${d.account}`;
    if (cached?.key === key) return cached.verifier;
    const [{ parseAccountXpub }, { AccountVerifier }] = await Promise.all([
      import('../crypto/hd.js'),
      import('../crypto/account-verifier.js'),
    ]);
    let inner: ReceiptVerifier;
    try {
      inner = new AccountVerifier(parseAccountXpub(xpub, 'account.xpub'), d);
    } catch {
      return undefined;
    }
    // HOOK.md is rewritten on every hook change: a receipt's signature is checked once per content.
    const memo = new Map<string, ReceiptProblem[]>();
    const verifier: ReceiptVerifier = {
      fingerprint: inner.fingerprint,
      keyPath: (position) => inner.keyPath(position),
      verify(receipt, position) {
        const memoKey = `${position.taskIndex}/${position.receiptIndex}/${JSON.stringify(receipt)}`;
        let problems = memo.get(memoKey);
        if (!problems) {
          problems = inner.verify(receipt, position);
          memo.set(memoKey, problems);
        }
        return [...problems];
      },
    };
    cached = { key, verifier };
    return verifier;
  }

  return async (hook: Hook, task: Task | undefined): Promise<string[] | undefined> => {
    if (hook.receipts.length === 0) return [];
    const xpub = readAccountXpubFile(home);
    if (!xpub) return hook.receipts.map(() => NO_KEY_STATUS);
    const d = typeof derivation === 'function' ? await derivation() : derivation;
    const verifier = await verifierFor(xpub, d);
    if (!verifier) return hook.receipts.map(() => 'no valid key to check');
    const taskIndex = hook.task_index ?? task?.task_index;
    if (taskIndex === undefined) return hook.receipts.map(() => '✗ task has no key index');
    const set = { taskId: hook.task_id, taskIndex, artifactsBase: taskDir(hook.workspace_id, hook.task_id, home) };
    return hook.receipts.map((receipt, index) => statusLabel(checkReceipt(verifier, set, receipt, index, hasher)));
  };
}

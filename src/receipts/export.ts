// `atlas receipts export`: a bundle of tasks' receipts (whole and in order) with the local account
// xpub and its fingerprint, for committing with a change or uploading from CI.

import { keyFilePaths, masterKeyExists, readAccountXpubFile } from '../crypto/key-files.js';
import { ensureMasterKey } from '../crypto/key-manager.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation } from '../domain/receipt.js';
import { toTimestamp } from '../domain/time.js';
import { readHookOfTask } from '../store/hook-file.js';
import type { TaskRef } from '../store/task-store.js';
import { readTask } from '../store/task-store.js';
import type { BundleTask, ReceiptBundle } from './bundle.js';
import { BUNDLE_FORMAT, BUNDLE_VERSION, bundleArtifacts } from './bundle.js';

async function localXpub(home: string, derivation: KeyDerivation): Promise<string> {
  const existing = readAccountXpubFile(home);
  if (existing !== undefined) return existing;
  // account.xpub is derived from the master key: restore it when only it is missing.
  if (masterKeyExists(home)) return (await ensureMasterKey(home, { hooks: { key_derivation: derivation } })).xpub;
  throw new AtlasError(`no account key here: ${keyFilePaths(home).accountXpub} does not exist`, {
    exitCode: EXIT.key,
    hint: 'export on the machine whose ATLAS_HOME signed the receipts (or run `atlas init` first)',
  });
}

export function bundleTask(ref: TaskRef): BundleTask {
  let task: ReturnType<typeof readTask> | undefined;
  try {
    task = readTask(ref.dir);
  } catch {
    task = undefined;
  }
  const hook = readHookOfTask(ref, task?.steps);
  const taskIndex = hook.task_index ?? task?.task_index ?? null;
  if (taskIndex === null && hook.receipts.length > 0) {
    throw new AtlasError(`task ${ref.id} has receipts but no task_index in hook.json or task.json`, {
      exitCode: EXIT.input,
      hint: 'its receipts cannot be placed on a key path; restore hook.json from a backup',
    });
  }
  const entry: BundleTask = { task_id: hook.task_id, task_index: taskIndex, workspace_id: hook.workspace_id, receipts: hook.receipts };
  if (task?.template) entry.template = task.template;
  if (task?.branch) entry.branch = task.branch;
  // Keep receipts last: the long part of the entry.
  const { receipts, ...head } = entry;
  return { ...head, receipts };
}

export async function exportBundle(
  refs: TaskRef[],
  home: string,
  derivation: KeyDerivation,
  now: Date = new Date(),
  atlasVersion?: string,
): Promise<ReceiptBundle> {
  const xpub = await localXpub(home, derivation);
  const { parseAccountXpub, fingerprintHex } = await import('../crypto/hd.js');
  const node = parseAccountXpub(xpub, keyFilePaths(home).accountXpub);
  const tasks = refs.map(bundleTask);
  return {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    ...(atlasVersion ? { atlas_version: atlasVersion } : {}),
    exported_at: toTimestamp(now),
    xpub,
    xpub_fingerprint: fingerprintHex(node),
    key_derivation: derivation,
    tasks,
    artifacts: bundleArtifacts(tasks),
  };
}

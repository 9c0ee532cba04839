// The ValidationRecorder the task runner calls once per validation command it ran: hashes the
// exact output bytes, reads the git state of the task's working tree, signs a version-3 receipt
// (DESIGN §7) and appends it to hook.receipts under the hook lock, with a history event.

import { sha256Hex } from '../crypto/hash.js';
import { FileKeyManager } from '../crypto/key-manager.js';
import type { KeyManager, ReceiptSigner } from '../crypto/signer.js';
import { formatDuration } from '../domain/duration.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { recordEvent } from '../domain/hook.js';
import type { KeyDerivation, UnsignedReceipt, ValidationReceipt } from '../domain/receipt.js';
import { CURRENT_MESSAGE_VERSION, ReceiptFormatError } from '../domain/receipt.js';
import type { Task } from '../domain/task.js';
import { toTimestamp } from '../domain/time.js';
import type { ValidationRecorder, ValidationRun } from '../engine/validation-recorder.js';
import { hiddenIndexEntries } from '../git/index-bits.js';
import type { GitState } from '../git/state.js';
import { readGitState } from '../git/state.js';
import type { HookManager } from '../hook/manager.js';
import { newReceiptId } from '../store/ids.js';
import { allocateTaskIndex } from '../store/task-index.js';
import { readTask, updateTask } from '../store/task-store.js';

export const RECEIPT_RECORDED = 'receipt_recorded';

export interface SigningRecorderOptions {
  /** Defaults to the master key in $ATLAS_HOME/keys. */
  keyManager?: KeyManager;
  /** Test seam; defaults to `git status` in the task's working tree. */
  readGit?: (worktree: string) => Promise<GitState>;
}

interface DerivationSource {
  hooks: { key_derivation: KeyDerivation };
}

/**
 * The task's key derivation index: the hook's, else task.json's, else a new one (a task created
 * before indexes existed). Runs inside the hook lock, so two recorders never allocate twice.
 */
async function ensureTaskIndex(home: string, manager: HookManager, hook: Hook): Promise<number> {
  if (hook.task_index !== undefined) return hook.task_index;
  let fromTask: number | undefined;
  try {
    fromTask = readTask(manager.ref.dir).task_index;
  } catch {
    fromTask = undefined;
  }
  if (fromTask !== undefined) return fromTask;
  const index = await allocateTaskIndex(home);
  await updateTask(manager.ref.dir, (task) => ({ ...task, task_index: index }));
  return index;
}

function uniqueReceiptId(hook: Hook): string {
  const taken = new Set(hook.receipts.map((r) => r.receipt_id));
  for (;;) {
    const id = newReceiptId();
    if (!taken.has(id)) return id;
  }
}

export function createSigningRecorder(home: string, config: DerivationSource, options: SigningRecorderOptions = {}): ValidationRecorder {
  const keyManager = options.keyManager ?? new FileKeyManager(home, config.hooks.key_derivation);
  const readGit = options.readGit ?? readGitState;
  let signer: Promise<ReceiptSigner> | undefined;

  return {
    async record(manager: HookManager, task: Task, run: ValidationRun): Promise<ValidationReceipt> {
      // Everything slow or fallible happens before the lock: loading the key, hashing, git.
      signer ??= keyManager.newSigner();
      let active: ReceiptSigner;
      try {
        active = await signer;
      } catch (error) {
        signer = undefined; // let a later call retry once the key is fixed
        throw error;
      }
      const stdoutHash = sha256Hex(run.stdout);
      const stderrHash = sha256Hex(run.stderr);
      let git: GitState | undefined;
      try {
        git = await readGit(task.worktree);
        // A tree that looks clean only because git was told not to look is not the committed tree.
        if (!git.dirty && (await hiddenIndexEntries(task.worktree)).length > 0) git = { ...git, dirty: true };
      } catch {
        git = undefined; // not a repository any more: recorded as dirty, with no commit
      }

      let recorded: ValidationReceipt | undefined;
      await manager.update(async (hook) => {
        const taskIndex = await ensureTaskIndex(home, manager, hook);
        const receiptIndex = hook.receipts.length;
        const unsigned: UnsignedReceipt = {
          receipt_id: uniqueReceiptId(hook),
          step_name: run.stepName,
          command: run.command,
          exit_code: run.exitCode,
          started_at: toTimestamp(run.startedAt),
          completed_at: toTimestamp(run.completedAt),
          duration: formatDuration(Math.max(0, run.completedAt.getTime() - run.startedAt.getTime())),
          stdout_hash: stdoutHash,
          stderr_hash: stderrHash,
          message_version: CURRENT_MESSAGE_VERSION,
          task_id: hook.task_id,
          git_dirty: git?.dirty ?? true,
          stdout_artifact: run.stdoutArtifact,
          stderr_artifact: run.stderrArtifact,
          executable: run.executable,
          execution_mode: run.executionMode,
          validation_tree: run.validationTree,
          dependencies: run.dependencies,
        };
        if (git?.commit) unsigned.git_commit = git.commit;
        try {
          recorded = active.sign(unsigned, { taskIndex, receiptIndex });
        } catch (error) {
          if (error instanceof ReceiptFormatError) {
            throw new AtlasError(`cannot sign the receipt of \`${run.command}\`: ${error.message}`, {
              exitCode: EXIT.failure,
              hint: 'step names may not contain "|" or control characters; rename the step in the template',
              cause: error,
            });
          }
          throw error;
        }
        const next: Hook = { ...hook, task_index: taskIndex, receipts: [...hook.receipts, recorded] };
        return recordEvent(next, {
          trigger: RECEIPT_RECORDED,
          at: manager.timestamp(),
          stepName: run.stepName,
          details: { receipt_id: recorded.receipt_id, exit_code: recorded.exit_code, step_index: run.stepIndex },
        });
      });
      return recorded!;
    },
  };
}

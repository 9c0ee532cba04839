// `atlas receipts export --format in-toto`: the tasks' receipts as in-toto Statements in DSSE
// envelopes, one per task, step and commit, one envelope per line (JSON Lines, the in-toto bundle
// form, `.intoto.jsonl`). Every receipt is verified with the account key before it is attested:
// the attestation key must never sign what a receipt key did not (hook.json is writable by agents).

import { deriveAttestationKey, signAttestation } from '../crypto/attestation-key.js';
import { readMasterSeed } from '../crypto/key-files.js';
import type { AtlasTaskRef } from '../domain/attestation.js';
import { buildStatement, groupForAttestation } from '../domain/attestation.js';
import type { DsseEnvelope } from '../domain/dsse.js';
import { IN_TOTO_PAYLOAD_TYPE, preAuthEncoding } from '../domain/dsse.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation, ValidationReceipt } from '../domain/receipt.js';
import { runGit } from '../git/run-git.js';
import type { TaskRef } from '../store/task-store.js';
import { readTask } from '../store/task-store.js';
import { controlPathsOf } from './attestation-control.js';
import { checkJobs } from './check-sets.js';
import { bundleTask } from './export.js';

export interface SkippedReceipt {
  task_id: string;
  receipt_id: string;
  reason: string;
}

export interface AttestationExport {
  /** One DSSE envelope per line, each line ending in a newline. */
  text: string;
  envelopes: number;
  receipts: number;
  skipped: SkippedReceipt[];
  keyid: string;
  key_path: string;
}

/** The tree of a commit in the task's repository, or null when the repository does not have it. */
async function treeOf(repo: string | undefined, commit: string, cache: Map<string, string | null>): Promise<string | null> {
  if (repo === undefined) return null;
  const key = `${repo}\0${commit}`;
  if (cache.has(key)) return cache.get(key)!;
  const result = await runGit(repo, ['rev-parse', '--verify', '--quiet', `${commit}^{tree}`], { allowFailure: true });
  const tree = result.code === 0 && /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(result.stdout.trim()) ? result.stdout.trim() : null;
  cache.set(key, tree);
  return tree;
}

function skipReason(r: ValidationReceipt): string {
  if ((r.message_version ?? 1) < 2) return 'version 1: no commit signed';
  if (r.git_commit === undefined) return 'made before the first commit';
  return 'made with uncommitted changes';
}

export async function exportAttestations(refs: TaskRef[], home: string, derivation: KeyDerivation): Promise<AttestationExport> {
  const seed = readMasterSeed(home);
  const { masterFromSeed, deriveAccount } = await import('../crypto/hd.js');
  // The private account node: with it, checking a signature takes one multiplication, not two.
  const account = deriveAccount(masterFromSeed(seed), derivation);
  const key = deriveAttestationKey(seed, derivation);
  const tasks = refs.map((ref) => {
    let task: ReturnType<typeof readTask> | undefined;
    try {
      task = readTask(ref.dir);
    } catch {
      task = undefined; // the hook alone still names the receipts
    }
    return { ref, entry: bundleTask(ref), repo: task?.repo_root };
  });

  const withReceipts = tasks.filter((t) => t.entry.receipts.length > 0);
  const outcomes = await checkJobs(
    withReceipts.map((t) => ({
      taskId: t.entry.task_id,
      taskIndex: t.entry.task_index!,
      derivation,
      receipts: t.entry.receipts,
      artifactsBase: t.ref.dir,
    })),
    account,
  );
  withReceipts.forEach((t, j) => {
    const bad = outcomes[j]!.find((o) => !o.valid);
    if (bad) {
      const receipt = t.entry.receipts[bad.index]!;
      throw new AtlasError(
        `receipt ${receipt.receipt_id} of ${t.entry.task_id} does not verify (${bad.problems[0]!.message}): nothing was attested`,
        {
          exitCode: EXIT.failure,
          hint: `see \`atlas verify ${t.entry.task_id}\`; only receipts that verify with this machine's key are attested`,
        },
      );
    }
  });

  const lines: string[] = [];
  const skipped: SkippedReceipt[] = [];
  const trees = new Map<string, string | null>();
  let receipts = 0;
  for (const { ref, entry, repo } of tasks) {
    const { groups, skipped: notAttestable } = groupForAttestation(entry.receipts);
    for (const r of notAttestable) skipped.push({ task_id: entry.task_id, receipt_id: r.receipt_id, reason: skipReason(r) });
    const task: AtlasTaskRef = { id: entry.task_id, index: entry.task_index, workspace_id: entry.workspace_id };
    if (entry.template) task.template = entry.template;
    if (entry.branch) task.branch = entry.branch;
    for (const group of groups) {
      const statement = buildStatement({
        task,
        step: group.step,
        commit: group.commit,
        tree: await treeOf(repo, group.commit, trees),
        control_paths: controlPathsOf(entry.task_id, ref.dir, entry.receipts, group.commit),
        receipts: group.receipts,
      });
      const payload = Buffer.from(JSON.stringify(statement), 'utf8');
      const sig = signAttestation(key, preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload));
      const envelope: DsseEnvelope = {
        payloadType: IN_TOTO_PAYLOAD_TYPE,
        payload: payload.toString('base64'),
        signatures: [{ keyid: key.keyid, sig: sig.toString('base64') }],
      };
      lines.push(`${JSON.stringify(envelope)}\n`);
      receipts += group.receipts.length;
    }
  }
  if (lines.length === 0) {
    throw new AtlasError(
      `nothing to attest: no receipt of ${tasks.map((t) => t.entry.task_id).join(', ')} was made on a commit with a clean tree`,
      {
        exitCode: EXIT.input,
        hint: 'an attestation names the commit it tested: commit the changes, run the validation again, then export',
      },
    );
  }
  return { text: lines.join(''), envelopes: lines.length, receipts, skipped, keyid: key.keyid, key_path: key.path };
}

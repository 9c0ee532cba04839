// The control_paths of a task's attestations at export: the verdict of its last control review,
// whose signed output (the artifact, checked against the receipt's stdout_hash) lists the changes;
// without one, the task's control record tells whether the inspection of the statement's commit
// found nothing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../crypto/hash.js';
import type { ControlPathState } from '../domain/attestation-control.js';
import {
  CONTROL_PATHS_NONE_FOUND,
  CONTROL_PATHS_NOT_RECORDED,
  lastControlReview,
  reviewedControlPaths,
} from '../domain/attestation-control.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { ValidationReceipt } from '../domain/receipt.js';
import { readControlRecord } from '../store/control-record.js';

/** `receipts` have been verified with the account key; `taskDir` holds their artifacts; `commit`: the statement's. */
export function controlPathsOf(taskId: string, taskDir: string, receipts: readonly ValidationReceipt[], commit: string): ControlPathState {
  const review = lastControlReview(receipts);
  if (review === undefined) {
    // No review is signed when nothing is found: the record must show the last inspection saw
    // this very commit (a later local step, or a commit the inspection never saw, claims nothing).
    const record = readControlRecord(taskDir);
    return record !== undefined && record.findings.length === 0 && record.inspected_commit === commit
      ? CONTROL_PATHS_NONE_FOUND
      : CONTROL_PATHS_NOT_RECORDED;
  }
  let output: Buffer | undefined;
  try {
    output = review.stdout_artifact ? readFileSync(join(taskDir, review.stdout_artifact)) : undefined;
  } catch {
    output = undefined;
  }
  if (output === undefined || sha256Hex(output) !== review.stdout_hash) {
    throw new AtlasError(
      `the output of control review ${review.receipt_id} of ${taskId} is ${output === undefined ? 'missing' : 'not what the receipt signed'}: its changes cannot be attested`,
      {
        exitCode: EXIT.failure,
        hint: `see \`atlas verify ${taskId}\` (artifacts); restore ${review.stdout_artifact ?? 'the artifact'} in the task folder, then export again`,
      },
    );
  }
  const changes = output.toString('utf8').replace(/\n$/, '').split('\n');
  return reviewedControlPaths(review, changes);
}

// Checks one receipt at its position: format, key path and signature (through a ReceiptVerifier),
// the task it was made for, its times, and the artifact files' hashes when they are present.
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { sha256FileHex } from '../crypto/hash.js';
import type { ReceiptVerifier } from '../crypto/signer.js';
import type { ReceiptProblem, ValidationReceipt } from '../domain/receipt.js';
import { receiptTimeProblems, signsCommit } from '../domain/receipt.js';

/** What became of an output artifact: hash matches, differs, file absent, no path recorded, or not looked for. */
export type ArtifactState = 'verified' | 'changed' | 'missing' | 'not_recorded' | 'not_checked' | 'outside';

export interface ReceiptResult {
  index: number;
  receipt: ValidationReceipt;
  valid: boolean;
  problems: ReceiptProblem[];
  artifacts: { stdout: ArtifactState; stderr: ArtifactState };
}

export interface ReceiptSetRef {
  taskId: string;
  taskIndex: number;
  /** Folder the receipts' artifact paths are relative to (the task directory); undefined: not checked. */
  artifactsBase?: string | undefined;
}

/** Hashing a large log on every HOOK.md rewrite would be wasteful: hashes are kept per file version. */
export class ArtifactHasher {
  private readonly cache = new Map<string, string>();

  hash(path: string): string {
    const st = statSync(path);
    const key = `${path}\0${st.size}\0${st.mtimeMs}\0${st.ino}`;
    let value = this.cache.get(key);
    if (value === undefined) {
      value = sha256FileHex(path).sha256;
      this.cache.set(key, value);
    }
    return value;
  }
}

function checkArtifact(
  stream: 'stdout' | 'stderr',
  receipt: ValidationReceipt,
  base: string | undefined,
  hasher: ArtifactHasher,
  problems: ReceiptProblem[],
): ArtifactState {
  const path = stream === 'stdout' ? receipt.stdout_artifact : receipt.stderr_artifact;
  const expected = stream === 'stdout' ? receipt.stdout_hash : receipt.stderr_hash;
  if (typeof path !== 'string' || path.length === 0) return 'not_recorded';
  if (base === undefined) return 'not_checked';
  const full = resolve(base, path);
  const rel = relative(base, full);
  if (isAbsolute(path) || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    problems.push({
      check: stream,
      field: `${stream}_artifact`,
      message: `${stream}_artifact ${JSON.stringify(path)} points outside the task directory`,
    });
    return 'outside';
  }
  if (!existsSync(full)) return 'missing';
  let actual: string;
  try {
    actual = hasher.hash(full);
  } catch (error) {
    problems.push({
      check: stream,
      field: `${stream}_artifact`,
      message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    });
    return 'changed';
  }
  if (actual === expected) return 'verified';
  problems.push({
    check: stream,
    field: `${stream}_hash`,
    message: `${stream} changed: ${path} hashes to ${actual.slice(0, 12)}…, the receipt says ${String(expected).slice(0, 12)}…`,
  });
  return 'changed';
}

export function checkReceipt(
  verifier: ReceiptVerifier,
  set: ReceiptSetRef,
  receipt: ValidationReceipt,
  index: number,
  hasher: ArtifactHasher,
): ReceiptResult {
  const problems = verifier.verify(receipt, { taskIndex: set.taskIndex, receiptIndex: index });
  const wellFormed = !problems.some((p) => p.check === 'format');
  if (wellFormed) {
    if (signsCommit(receipt) && receipt.task_id !== set.taskId) {
      problems.push({
        check: 'task',
        field: 'task_id',
        message: `made for task ${receipt.task_id}, found in task ${set.taskId} (copied from another task?)`,
      });
    }
    problems.push(...receiptTimeProblems(receipt, Date.now()));
  }
  const artifacts = {
    stdout: checkArtifact('stdout', receipt, set.artifactsBase, hasher, problems),
    stderr: checkArtifact('stderr', receipt, set.artifactsBase, hasher, problems),
  };
  return { index, receipt, valid: problems.length === 0, problems, artifacts };
}

/** One short label for HOOK.md's receipts table. */
export function statusLabel(result: ReceiptResult): string {
  if (result.valid) {
    const missing = (['stdout', 'stderr'] as const).filter((s) => result.artifacts[s] === 'missing');
    return missing.length > 0 ? `✓ verified (${missing.join(', ')} file missing)` : '✓ verified';
  }
  const first = result.problems[0]!;
  switch (first.check) {
    case 'signature':
      return '✗ signature invalid';
    case 'key_path':
      return '✗ key path wrong';
    case 'stdout':
      return '✗ stdout changed';
    case 'stderr':
      return '✗ stderr changed';
    case 'task':
      return '✗ from another task';
    case 'times':
      return first.message.includes('in the future') ? '✗ dated in the future' : '✗ completed before started';
    case 'format':
      return `✗ malformed ${first.field ?? 'field'}`;
  }
}

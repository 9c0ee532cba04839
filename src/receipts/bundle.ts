// The receipt bundle: what `atlas receipts export` writes and `atlas verify` reads — a JSON file
// committed with a change or uploaded from CI (format in docs/keys-and-verification.md). Receipts
// are copied whole and in order: a receipt's position is part of its key path.
import { AtlasError, EXIT } from '../domain/errors.js';
import { RECEIPT_STRING_FIELDS } from '../domain/hook-schema.js';
import type { KeyDerivation, ValidationReceipt } from '../domain/receipt.js';
import { isChildIndex, isKeyDerivation } from '../domain/receipt.js';
import { TASK_ID_PATTERN } from '../domain/task.js';
import { isTimestamp } from '../domain/time.js';

export const BUNDLE_FORMAT = 'atlas-receipt-bundle';
export const BUNDLE_VERSION = 1;

export interface BundleTask {
  task_id: string;
  /** The task's key derivation index; null only for a task without receipts. */
  task_index: number | null;
  workspace_id: string;
  template?: string;
  branch?: string;
  receipts: ValidationReceipt[];
}

/** One output file of a receipt and the hash the receipt signs for it. */
export interface BundleArtifact {
  task_id: string;
  receipt_id: string;
  stream: 'stdout' | 'stderr';
  path: string | null;
  sha256: string;
}

export interface ReceiptBundle {
  format: typeof BUNDLE_FORMAT;
  version: typeof BUNDLE_VERSION;
  exported_at: string;
  atlas_version?: string;
  /** The exporter's account xpub, for information: verify uses the key it is given, never this one. */
  xpub: string;
  xpub_fingerprint: string;
  key_derivation: KeyDerivation;
  tasks: BundleTask[];
  /** Every output artifact's hash (the same values the receipts sign), for tools that fetch artifacts. */
  artifacts: BundleArtifact[];
}

export function bundleArtifacts(tasks: BundleTask[]): BundleArtifact[] {
  return tasks.flatMap((t) =>
    t.receipts.flatMap((r) =>
      (['stdout', 'stderr'] as const).map((stream) => ({
        task_id: t.task_id,
        receipt_id: r.receipt_id,
        stream,
        path: (stream === 'stdout' ? r.stdout_artifact : r.stderr_artifact) ?? null,
        sha256: stream === 'stdout' ? r.stdout_hash : r.stderr_hash,
      })),
    ),
  );
}

class BundleError extends AtlasError {
  constructor(source: string, field: string, problem: string) {
    super(`${source} is not a valid receipt bundle: ${field}: ${problem}`, {
      exitCode: EXIT.input,
      hint: 'export it again with `atlas receipts export` (format: docs/keys-and-verification.md)',
    });
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const RECEIPT_OPTIONAL_STRINGS = ['task_id', 'git_commit', 'stdout_artifact', 'stderr_artifact'];

/**
 * Shape check of a receipt (the same as hook.json's): types only. Whether the values are
 * well-formed is a per-receipt verdict of verify, not a malformed input.
 */
export function receiptShapeProblem(v: unknown): string | undefined {
  if (!isObj(v)) return 'expected an object';
  for (const key of RECEIPT_STRING_FIELDS) if (typeof v[key] !== 'string') return `${key}: expected a string`;
  if (typeof v['exit_code'] !== 'number' || !Number.isInteger(v['exit_code'])) return 'exit_code: expected an integer';
  for (const key of RECEIPT_OPTIONAL_STRINGS) if (v[key] !== undefined && typeof v[key] !== 'string') return `${key}: expected a string`;
  if (v['git_dirty'] !== undefined && typeof v['git_dirty'] !== 'boolean') return 'git_dirty: expected true or false';
  if (v['message_version'] !== undefined && typeof v['message_version'] !== 'number') return 'message_version: expected a number';
  return undefined;
}

/** Validates a parsed bundle at the edge; throws AtlasError (exit 2) naming the first bad field. */
export function parseBundle(data: unknown, source: string): ReceiptBundle {
  const fail = (field: string, problem: string): never => {
    throw new BundleError(source, field, problem);
  };
  if (!isObj(data)) return fail('bundle', 'expected a JSON object');
  if (data['format'] !== BUNDLE_FORMAT) fail('format', `expected "${BUNDLE_FORMAT}"`);
  if (data['version'] !== BUNDLE_VERSION) {
    fail(
      'version',
      typeof data['version'] === 'number' && data['version'] > BUNDLE_VERSION
        ? `${data['version']} is newer than this atlas understands; upgrade atlas`
        : `expected ${BUNDLE_VERSION}`,
    );
  }
  if (!isTimestamp(data['exported_at'])) fail('exported_at', 'expected an RFC 3339 time');
  if (typeof data['xpub'] !== 'string') fail('xpub', 'expected a string');
  if (typeof data['xpub_fingerprint'] !== 'string') fail('xpub_fingerprint', 'expected a string');
  if (!isKeyDerivation(data['key_derivation']))
    fail('key_derivation', 'expected { purpose, coin_type, account } with indexes 0..2147483647');
  if (!Array.isArray(data['tasks'])) fail('tasks', 'expected a list');
  (data['tasks'] as unknown[]).forEach((t, i) => {
    const f = `tasks[${i}]`;
    if (!isObj(t)) {
      fail(f, 'expected an object');
      return;
    }
    if (typeof t['task_id'] !== 'string' || !TASK_ID_PATTERN.test(t['task_id']))
      fail(`${f}.task_id`, 'expected a task id like task-20260117-143022');
    if (typeof t['workspace_id'] !== 'string') fail(`${f}.workspace_id`, 'expected a string');
    if (!Array.isArray(t['receipts'])) fail(`${f}.receipts`, 'expected a list');
    const receipts = t['receipts'] as unknown[];
    if (!(isChildIndex(t['task_index']) || (t['task_index'] === null && receipts.length === 0))) {
      fail(`${f}.task_index`, 'expected an integer 0..2147483647 (null only when there are no receipts)');
    }
    receipts.forEach((r, j) => {
      const problem = receiptShapeProblem(r);
      if (problem) fail(`${f}.receipts[${j}]`, problem);
    });
  });
  if (data['artifacts'] !== undefined && !Array.isArray(data['artifacts'])) fail('artifacts', 'expected a list');
  return data as unknown as ReceiptBundle;
}

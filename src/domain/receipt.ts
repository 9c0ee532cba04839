// Validation receipts (seed 003 ValidationReceipt) and the exact message that is signed (DESIGN §7).
// Pure: formats, the message, key paths. Hashing and signatures live in src/crypto.

import { EXECUTION_MODES, type ExecutionMode } from './execution-mode.js';
import { TASK_ID_PATTERN } from './task.js';
import { isTimestamp } from './time.js';

export type { ExecutionMode } from './execution-mode.js';
export { EXECUTION_MODES } from './execution-mode.js';

export interface ValidationReceipt {
  receipt_id: string;
  step_name: string;
  command: string;
  exit_code: number;
  started_at: string;
  completed_at: string;
  /** Human-readable, e.g. "12.3s". */
  duration: string;
  stdout_hash: string;
  stderr_hash: string;
  key_path: string;
  signature: string;
  // Additions (DESIGN §7): what was validated and which message form was signed.
  message_version?: 1 | 2 | 3 | 4;
  task_id?: string;
  git_commit?: string;
  git_dirty?: boolean;
  /** Paths of the exact output bytes, relative to the task directory. */
  stdout_artifact?: string;
  stderr_artifact?: string;
  // Version 3: what ran, and where.
  /** Absolute path of the program the command's first word resolved to on the step's PATH; "" for a shell builtin or a word that did not resolve. */
  executable?: string;
  execution_mode?: ExecutionMode;
  // Version 4: on which tree the command ran, and where its dependencies came from.
  validation_tree?: ValidationTree;
  /** `worktree`, `repository`, `none` or `setup:<sha256 of the setup's inputs>` (DependencySource). */
  dependencies?: string;
}

/** Where a validation command ran: on this machine as the user, or in a sandbox (issue 12). */

/**
 * The tree a validation command ran on: the task's working tree (fast; anything the agent left in
 * it, ignored folders included, takes part), or a pristine copy of its tracked and unignored
 * files with dependencies the agent could not write (issue 18).
 */
export type ValidationTree = 'worktree' | 'pristine';
export const VALIDATION_TREES: readonly ValidationTree[] = ['worktree', 'pristine'];

/**
 * Where a pristine tree's dependency folders came from: `setup:<hash>` (built by
 * validation.setup on the task's base commit and cached, the hash naming the setup and the
 * lockfiles), `uncached:<hash>` (built in the pristine tree itself, whose lockfiles or manifests
 * differ from the base commit's), `repository` (the
 * main checkout's folders, which a sandboxed step cannot write), `none`; `worktree` for a run in
 * the working tree (whatever it held).
 */
export const DEPENDENCIES_PATTERN = /^(?:worktree|repository|none|(?:setup|uncached):[0-9a-f]{64})$/;

/** A receipt before signing: everything but key_path and signature. */
export type UnsignedReceipt = Omit<ValidationReceipt, 'key_path' | 'signature'>;

export const RECEIPT_ID_PATTERN = /^rcpt-[0-9a-f]{8}$/;
export const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;
/** Full object names of SHA-1 (40) and SHA-256 (64) repositories. */
export const GIT_COMMIT_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** DER ECDSA signatures are at most 72 bytes. */
export const SIGNATURE_HEX_PATTERN = /^(?:[0-9a-f]{2}){8,72}$/;
/** The version atlas writes; receipts without message_version are version 1 (the seed's message). */
export const CURRENT_MESSAGE_VERSION = 4;
/** Versions that sign the task, step, commit and tree state (2 and later). */
export function signsCommit(receipt: Pick<ValidationReceipt, 'message_version'>): boolean {
  return messageVersionOf(receipt) >= 2;
}
/** Highest non-hardened BIP32 child index. */
export const MAX_CHILD_INDEX = 0x7fffffff;

export function isReceiptId(value: unknown): value is string {
  return typeof value === 'string' && RECEIPT_ID_PATTERN.test(value);
}

export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX_PATTERN.test(value);
}

export function isGitCommit(value: unknown): value is string {
  return typeof value === 'string' && GIT_COMMIT_PATTERN.test(value);
}

/** The executable is signed between fixed-format fields: an absolute path with no `|` or control characters, or "". */
export function isSignableExecutable(value: unknown): value is string {
  // eslint-disable-next-line no-control-regex
  return (
    typeof value === 'string' && (value === '' || (value.startsWith('/') && value.length <= 4096 && !/[|\u0000-\u001f\u007f]/.test(value)))
  );
}

/** Step names are signed between fixed-format fields, so they may hold no `|` and no control characters. */
export function isSignableStepName(value: unknown): value is string {
  // eslint-disable-next-line no-control-regex
  return typeof value === 'string' && value.length > 0 && value.length <= 200 && !/[|\u0000-\u001f\u007f]/.test(value);
}

export function messageVersionOf(receipt: Pick<ValidationReceipt, 'message_version'>): number {
  return receipt.message_version ?? 1;
}

// --- Problems found in a receipt -----------------------------------------------------------------

/** Which check a receipt failed; one receipt may fail several. */
export type ReceiptCheck = 'format' | 'key_path' | 'signature' | 'task' | 'times' | 'stdout' | 'stderr';

export interface ReceiptProblem {
  check: ReceiptCheck;
  /** The receipt field at fault, when there is one. */
  field?: string;
  message: string;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 48 ? `${value.slice(0, 48)}…` : value);
  if (value === undefined) return 'nothing';
  return JSON.stringify(value) ?? String(value);
}

/**
 * Format checks of every field the message of this receipt's version covers. The message puts the
 * free-text command between fixed-format fields, so once these pass no field can shift another.
 */
export function receiptFormatProblems(receipt: ValidationReceipt): ReceiptProblem[] {
  const problems: ReceiptProblem[] = [];
  const bad = (field: string, expected: string, value: unknown) =>
    problems.push({ check: 'format', field, message: `${field} must be ${expected}, got ${show(value)}` });
  const r = receipt as unknown as Record<string, unknown>;

  const version = r['message_version'] ?? 1;
  if (version !== 1 && version !== 2 && version !== 3 && version !== 4) bad('message_version', '1, 2, 3 or 4', version);
  if (!isReceiptId(r['receipt_id'])) bad('receipt_id', '"rcpt-" and 8 lowercase hex characters', r['receipt_id']);
  if (typeof r['command'] !== 'string') bad('command', 'text', r['command']);
  if (typeof r['exit_code'] !== 'number' || !Number.isSafeInteger(r['exit_code'])) bad('exit_code', 'an integer', r['exit_code']);
  if (!isSha256Hex(r['stdout_hash'])) bad('stdout_hash', '64 lowercase hex characters (SHA-256)', r['stdout_hash']);
  if (!isSha256Hex(r['stderr_hash'])) bad('stderr_hash', '64 lowercase hex characters (SHA-256)', r['stderr_hash']);
  if (!isTimestamp(r['completed_at'])) bad('completed_at', 'an RFC 3339 time', r['completed_at']);
  if (!isTimestamp(r['started_at'])) bad('started_at', 'an RFC 3339 time', r['started_at']);
  if (typeof r['step_name'] !== 'string') bad('step_name', 'text', r['step_name']);
  if (version === 4) {
    if (!(VALIDATION_TREES as readonly unknown[]).includes(r['validation_tree']))
      bad('validation_tree', 'worktree or pristine', r['validation_tree']);
    if (typeof r['dependencies'] !== 'string' || !DEPENDENCIES_PATTERN.test(r['dependencies']))
      bad('dependencies', 'worktree, repository, none, setup:<64 hex characters> or uncached:<64 hex characters>', r['dependencies']);
  }
  if (version === 3 || version === 4) {
    if (!isSignableExecutable(r['executable']))
      bad('executable', 'an absolute path without "|" or control characters, or "" (a shell builtin)', r['executable']);
    if (!(EXECUTION_MODES as readonly unknown[]).includes(r['execution_mode']))
      bad('execution_mode', 'local or sandbox', r['execution_mode']);
  }
  if (version === 2 || version === 3 || version === 4) {
    if (typeof r['task_id'] !== 'string' || !TASK_ID_PATTERN.test(r['task_id']))
      bad('task_id', 'a task id like task-20260117-143022', r['task_id']);
    if (!isSignableStepName(r['step_name'])) bad('step_name', 'a non-empty name without "|" or control characters', r['step_name']);
    if (r['git_commit'] !== undefined && !isGitCommit(r['git_commit']))
      bad('git_commit', 'a full lowercase commit id (40 or 64 hex characters)', r['git_commit']);
    if (typeof r['git_dirty'] !== 'boolean') bad('git_dirty', 'true or false', r['git_dirty']);
  }
  return problems;
}

export class ReceiptFormatError extends Error {
  override name = 'ReceiptFormatError';
  constructor(readonly problems: ReceiptProblem[]) {
    super(problems.map((p) => p.message).join('; '));
  }
}

/** Whole seconds since the epoch of an RFC 3339 time (the seed's `completed_at_unix`). */
export function unixSeconds(timestamp: string): number {
  return Math.floor(Date.parse(timestamp) / 1000);
}

/**
 * The exact text that is signed (DESIGN §7), UTF-8 encoded by the caller.
 * v1 (seed 003): {receipt_id}|{command}|{exit_code}|{stdout_hash}|{stderr_hash}|{completed_at_unix}
 * v2: v1 followed by |{task_id}|{step_name}|{git_commit}|{git_dirty} (git_commit empty before the first commit).
 * v3: v2 followed by |{executable}|{execution_mode} (executable empty for a shell builtin).
 * v4: v3 followed by |{validation_tree}|{dependencies}.
 * Throws ReceiptFormatError when a field is not well-formed.
 */
export function receiptMessage(receipt: ValidationReceipt | UnsignedReceipt): string {
  const problems = receiptFormatProblems(receipt as ValidationReceipt);
  if (problems.length > 0) throw new ReceiptFormatError(problems);
  const v1 = [
    receipt.receipt_id,
    receipt.command,
    String(receipt.exit_code),
    receipt.stdout_hash,
    receipt.stderr_hash,
    String(unixSeconds(receipt.completed_at)),
  ].join('|');
  const version = messageVersionOf(receipt);
  if (version === 1) return v1;
  const v2 = [v1, receipt.task_id, receipt.step_name, receipt.git_commit ?? '', String(receipt.git_dirty)].join('|');
  if (version === 2) return v2;
  const v3 = [v2, receipt.executable, receipt.execution_mode].join('|');
  if (version === 3) return v3;
  return [v3, receipt.validation_tree, receipt.dependencies].join('|');
}

/** How far a receipt's times may lie ahead of the verifier's clock (clock skew between machines). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * completed_at must not be before started_at, and neither may lie in the future beyond the clock
 * skew: a receipt cannot prove a run that has not happened yet (both already well-formed).
 */
export function receiptTimeProblems(receipt: ValidationReceipt, now: number): ReceiptProblem[] {
  const started = Date.parse(receipt.started_at);
  const completed = Date.parse(receipt.completed_at);
  if (Number.isNaN(started) || Number.isNaN(completed)) return [];
  const problems: ReceiptProblem[] = [];
  if (completed < started)
    problems.push({
      check: 'times',
      field: 'completed_at',
      message: `completed_at ${receipt.completed_at} is before started_at ${receipt.started_at}`,
    });
  for (const [field, at, text] of [
    ['completed_at', completed, receipt.completed_at],
    ['started_at', started, receipt.started_at],
  ] as const) {
    if (at > now + MAX_CLOCK_SKEW_MS) {
      problems.push({
        check: 'times',
        field,
        message: `${field} ${text} is ${Math.round((at - now) / 60_000)} min in the future (more than the 5 min allowed for clock skew)`,
      });
    }
  }
  return problems;
}

// --- Key paths -----------------------------------------------------------------------------------

/** seed 003 KeyDerivationConfig: m/{purpose}'/{coin_type}'/{account}'/{task_index}/{receipt_index}. */
export interface KeyDerivation {
  purpose: number;
  coin_type: number;
  account: number;
}

export const DEFAULT_KEY_DERIVATION: KeyDerivation = { purpose: 44, coin_type: 236, account: 0 };

export function isChildIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_CHILD_INDEX;
}

export function isKeyDerivation(value: unknown): value is KeyDerivation {
  if (typeof value !== 'object' || value === null) return false;
  const d = value as Record<string, unknown>;
  return isChildIndex(d['purpose']) && isChildIndex(d['coin_type']) && isChildIndex(d['account']);
}

/** The account (hardened) path whose extended public key verifies every receipt: m/44'/236'/0'. */
export function accountPath(d: KeyDerivation): string {
  return `m/${d.purpose}'/${d.coin_type}'/${d.account}'`;
}

/** Where the key of receipt `receiptIndex` of task `taskIndex` is derived. */
export function receiptKeyPath(d: KeyDerivation, taskIndex: number, receiptIndex: number): string {
  return `${accountPath(d)}/${taskIndex}/${receiptIndex}`;
}

export interface PathStep {
  index: number;
  hardened: boolean;
}

/** Parses "m/44'/236'/0'/5/0" (also accepts h or H for hardened); undefined when malformed. */
export function parseKeyPath(path: string): PathStep[] | undefined {
  const parts = path.split('/');
  if (parts[0] !== 'm') return undefined;
  const steps: PathStep[] = [];
  for (const part of parts.slice(1)) {
    const m = /^(0|[1-9]\d{0,9})(['hH]?)$/.exec(part);
    if (!m) return undefined;
    const index = Number(m[1]);
    if (index > MAX_CHILD_INDEX) return undefined;
    steps.push({ index, hardened: m[2] !== '' });
  }
  return steps;
}

/** The steps of `path` below the account, when `path` starts with the account path; else undefined. */
export function stepsBelowAccount(path: PathStep[], d: KeyDerivation): PathStep[] | undefined {
  const account = [d.purpose, d.coin_type, d.account];
  if (path.length < 3) return undefined;
  for (let i = 0; i < 3; i++) {
    if (!path[i]!.hardened || path[i]!.index !== account[i]) return undefined;
  }
  return path.slice(3);
}

export function formatKeyPath(steps: PathStep[]): string {
  return ['m', ...steps.map((s) => `${s.index}${s.hardened ? "'" : ''}`)].join('/');
}

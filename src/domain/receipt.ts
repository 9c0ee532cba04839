// Validation receipts (seed 003 ValidationReceipt) and the exact message that is signed (DESIGN §7).

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
  message_version?: 1 | 2;
  task_id?: string;
  git_commit?: string;
  git_dirty?: boolean;
  /** Paths of the exact output bytes, relative to the task directory. */
  stdout_artifact?: string;
  stderr_artifact?: string;
}

export const RECEIPT_ID_PATTERN = /^rcpt-[0-9a-f]{8}$/;
export const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

export function isReceiptId(value: unknown): value is string {
  return typeof value === 'string' && RECEIPT_ID_PATTERN.test(value);
}

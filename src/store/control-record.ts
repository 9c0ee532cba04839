// The task's record of control-path changes (control.json in the task folder): what the last
// inspection found at which commit, which findings a person approved, which the template allows,
// and which wait for review. Receipts sign its verdict (src/receipts/signing-recorder.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';

export interface ControlRecord {
  /** The commit and dirtiness the last inspection saw. */
  inspected_commit: string | null;
  /** Every finding of the last inspection, as `kind:path:detail` keys with their text. */
  findings: { key: string; text: string }[];
  /** Keys a person approved (atlas resume --approve while the task waited for review). */
  approved: string[];
  /** Keys the template allows by name (control_paths). */
  allowed: string[];
  /** Keys waiting for a person. */
  pending: string[];
}

/** What a receipt signs about control paths (message v5). */
export type ControlVerdict = 'none' | 'approved' | 'unapproved' | 'unchecked';

const FILE = 'control.json';

export function readControlRecord(taskDir: string): ControlRecord | undefined {
  try {
    const data = JSON.parse(readFileSync(join(taskDir, FILE), 'utf8')) as ControlRecord;
    return Array.isArray(data.findings) && Array.isArray(data.approved) && Array.isArray(data.pending) ? data : undefined;
  } catch {
    return undefined;
  }
}

export function writeControlRecord(taskDir: string, record: ControlRecord): void {
  writeFileAtomic(join(taskDir, FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** A person approved what waited: it joins the approved keys. */
export function approvePending(taskDir: string): string[] {
  const record = readControlRecord(taskDir);
  if (!record || record.pending.length === 0) return [];
  writeControlRecord(taskDir, { ...record, approved: [...new Set([...record.approved, ...record.pending])], pending: [] });
  return record.pending;
}

/**
 * The verdict for a receipt of `commit`: unchecked unless the last inspection saw this very
 * commit (a local run, or commands that committed after it), else none, approved or unapproved.
 */
export function controlVerdict(taskDir: string, commit: string | undefined): ControlVerdict {
  const record = readControlRecord(taskDir);
  if (!record || !commit || record.inspected_commit !== commit) return 'unchecked';
  if (record.pending.length > 0) return 'unapproved';
  return record.findings.length > 0 ? 'approved' : 'none';
}

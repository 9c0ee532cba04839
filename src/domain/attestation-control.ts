// What an attestation says about control-path changes (.atlas/, CI workflows, git hooks...): the
// verdict of the task's last signed control review (CONTROL_REVIEW_COMMAND receipt), with the
// changes it lists, bound to that receipt by its signed stdout hash. Pure.
import { createHash } from 'node:crypto';
import type { ValidationReceipt } from './receipt.js';
import { isControlReview } from './receipt-policy.js';

/** How a signed review line ends: who let the change in, or that it waits for a person. */
export const CHANGE_ALLOWED = ' (allowed by the template)';
export const CHANGE_APPROVED = ' (approved)';
export const CHANGE_AWAITING = ' (awaiting review)';

export type ControlPathStateName = 'none_found' | 'approved' | 'allowed_by_template' | 'awaiting_review' | 'not_recorded';

export interface ControlPathState {
  state: ControlPathStateName;
  detail: string;
  /** The signed review's lines, one per change (reviewed states only). */
  changes?: string[];
  review_receipt?: string;
  /** The review receipt itself, whole as hook.json holds it, so a verifier checks it like any. */
  review?: ValidationReceipt;
}

export const CONTROL_PATHS_NOT_RECORDED: ControlPathState = {
  state: 'not_recorded',
  detail:
    'no control inspection is recorded for this task (a step ran outside the sandbox, or the task predates them): nothing is claimed either way',
};

export const CONTROL_PATHS_NONE_FOUND: ControlPathState = {
  state: 'none_found',
  detail:
    "the task's last inspection (after a sandboxed step) saw this commit and found no change to a control path, gitlink, nested repository or index bit (no control review was signed)",
};

/** The task's last control review by completion time, if any. */
export function lastControlReview(receipts: readonly ValidationReceipt[]): ValidationReceipt | undefined {
  const reviews = receipts.filter(isControlReview).sort((a, b) => Date.parse(a.completed_at) - Date.parse(b.completed_at));
  return reviews[reviews.length - 1];
}

/** The bytes a review signs (its stdout) from its lines. */
export function reviewOutput(changes: readonly string[]): string {
  return `${changes.join('\n')}\n`;
}

/** The state a review states: exit 1 waits; exit 0 is the template's doing only when every line says so. */
export function reviewedState(review: ValidationReceipt, changes: readonly string[]): ControlPathStateName {
  if (review.exit_code !== 0) return 'awaiting_review';
  return changes.length > 0 && changes.every((c) => c.endsWith(CHANGE_ALLOWED)) ? 'allowed_by_template' : 'approved';
}

const DETAILS: Record<'approved' | 'allowed_by_template' | 'awaiting_review', string> = {
  approved: 'every change was approved by a person (atlas resume --approve) or allowed by the template',
  allowed_by_template: 'every change is to a path the template allows by name (control_paths); no person reviewed them',
  awaiting_review: "changes wait for a person's review: none is approved",
};

export function reviewedControlPaths(review: ValidationReceipt, changes: string[]): ControlPathState {
  const state = reviewedState(review, changes) as keyof typeof DETAILS;
  return { state, detail: DETAILS[state], changes, review_receipt: review.receipt_id, review };
}

/** Every way a statement's control_paths disagrees with its own review receipt (verify). */
export function controlPathProblems(value: unknown, taskId: string): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['atlas.control_paths is not an object'];
  const cp = value as Record<string, unknown>;
  const state = cp['state'];
  const review = cp['review'] as ValidationReceipt | undefined;
  if (state === 'not_recorded' || state === 'none_found') {
    return review === undefined && cp['changes'] === undefined ? [] : [`atlas.control_paths is ${String(state)} but names a review`];
  }
  if (state !== 'approved' && state !== 'allowed_by_template' && state !== 'awaiting_review')
    return [`atlas.control_paths.state ${JSON.stringify(state)} is not one this atlas writes`];
  const changes = cp['changes'];
  if (review === undefined || !Array.isArray(changes) || !changes.every((c) => typeof c === 'string'))
    return [`atlas.control_paths is ${state} without its review receipt and changes`];
  const problems: string[] = [];
  if (!isControlReview(review)) problems.push(`atlas.control_paths.review ${review.receipt_id} is not a control review`);
  if (review.task_id !== taskId)
    problems.push(`atlas.control_paths.review ${review.receipt_id} is of ${String(review.task_id)}, the statement of ${taskId}`);
  if (cp['review_receipt'] !== review.receipt_id)
    problems.push(`atlas.control_paths.review_receipt is ${JSON.stringify(cp['review_receipt'])}, its review is ${review.receipt_id}`);
  if (
    createHash('sha256')
      .update(reviewOutput(changes as string[]), 'utf8')
      .digest('hex') !== review.stdout_hash
  )
    problems.push('atlas.control_paths.changes are not what the review receipt signed (stdout_hash)');
  else if (reviewedState(review, changes as string[]) !== state)
    problems.push(`atlas.control_paths.state is ${state}, its review says ${reviewedState(review, changes as string[])}`);
  return problems;
}

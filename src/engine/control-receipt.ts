// The signed record of a control review: a receipt (the usual signed message, so `atlas verify`
// checks it with the public key alone) whose command is CONTROL_REVIEW_COMMAND, exit 0 when every
// control-path change is approved or allowed, 1 while some wait for a person; its output (kept as
// an artifact, its hash signed) lists the changes. Signed only when there is something to say.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CHANGE_ALLOWED, CHANGE_APPROVED, CHANGE_AWAITING, reviewOutput } from '../domain/attestation-control.js';
import { CONTROL_REVIEW_COMMAND, CONTROL_REVIEW_STEP } from '../domain/receipt-policy.js';
import type { Task } from '../domain/task.js';
import type { HookManager } from '../hook/manager.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../store/atomic-write.js';
import type { ValidationRecorder } from './validation-recorder.js';

export interface ControlReceiptInput {
  manager: HookManager;
  task: Task;
  recorder: ValidationRecorder | undefined;
  stepIndex: number;
  /** 0: approved or allowed; 1: changes wait for a person. */
  exitCode: 0 | 1;
  lines: string[];
}

/**
 * The lines a review signs: each change with who let it in (the template, a person) or that it
 * waits, so the signed output alone tells an attestation which (docs/keys-and-verification.md).
 */
export function reviewLines(
  findings: { key: string; text: string }[],
  allowed: readonly string[],
  approved: ReadonlySet<string>,
): string[] {
  return findings.map((f) => f.text + (allowed.includes(f.key) ? CHANGE_ALLOWED : approved.has(f.key) ? CHANGE_APPROVED : CHANGE_AWAITING));
}

export async function signControlReview(input: ControlReceiptInput): Promise<string | undefined> {
  if (!input.recorder) return undefined;
  const taskDir = input.manager.ref.dir;
  const dir = join('artifacts', 'control-review');
  mkdirSync(join(taskDir, dir), { recursive: true, mode: PRIVATE_DIR_MODE });
  const stamp = `${Date.now()}-${input.stepIndex}`;
  const stdout = Buffer.from(reviewOutput(input.lines));
  const paths = { stdout: join(dir, `${stamp}-stdout.log`), stderr: join(dir, `${stamp}-stderr.log`) };
  writeFileAtomic(join(taskDir, paths.stdout), stdout);
  writeFileAtomic(join(taskDir, paths.stderr), '');
  const now = new Date();
  const receipt = await input.recorder.record(input.manager, input.task, {
    stepName: CONTROL_REVIEW_STEP,
    stepIndex: input.stepIndex,
    command: CONTROL_REVIEW_COMMAND,
    exitCode: input.exitCode,
    startedAt: now,
    completedAt: now,
    stdout,
    stderr: Buffer.alloc(0),
    stdoutArtifact: paths.stdout,
    stderrArtifact: paths.stderr,
    executable: '',
    executionMode: 'sandbox',
    validationTree: 'worktree',
    dependencies: 'worktree',
  });
  return receipt.receipt_id;
}

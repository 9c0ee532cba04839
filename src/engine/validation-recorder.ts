// What a validation step hands over for each command it ran, so that proof can be recorded
// (signed receipts: src/receipts). The validation executor stores the exact output bytes under
// the task's artifacts/ before calling record().
import type { ExecutionMode, ValidationReceipt, ValidationTree } from '../domain/receipt.js';
import type { Task } from '../domain/task.js';
import type { HookManager } from '../hook/manager.js';

export interface ValidationRun {
  stepName: string;
  stepIndex: number;
  command: string;
  exitCode: number;
  startedAt: Date;
  completedAt: Date;
  stdout: Buffer;
  stderr: Buffer;
  /** Paths relative to the task directory, e.g. artifacts/validate/1-stdout.log. */
  stdoutArtifact: string;
  stderrArtifact: string;
  /** The program the command started (commandExecutable), "" for a shell builtin. */
  executable: string;
  /** Where the command ran: the one place the receipt's execution_mode comes from. */
  executionMode: ExecutionMode;
  /** The tree the command ran on, and where its dependency folders came from (DEPENDENCIES_PATTERN). */
  validationTree: ValidationTree;
  dependencies: string;
}

export interface ValidationRecorder {
  /** Appends a receipt for the run to the hook (under its lock) and returns it. */
  record(manager: HookManager, task: Task, run: ValidationRun): Promise<ValidationReceipt>;
}

// Receipts as in-toto Statements v1 (github.com/in-toto/attestation, spec/v1): one per task, step
// and commit, with the test-result predicate (spec/predicates/test-result.md) and atlas's own
// fields under the extension field `atlas` (format in docs/keys-and-verification.md). Pure.
import { createHash } from 'node:crypto';
import type { ControlPathState } from './attestation-control.js';
import type { ValidationReceipt } from './receipt.js';
import { signsCommit } from './receipt.js';
import { isControlReview } from './receipt-policy.js';

export type { ControlPathState } from './attestation-control.js';
export { CONTROL_PATHS_NOT_RECORDED } from './attestation-control.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const TEST_RESULT_PREDICATE_TYPE = 'https://in-toto.io/attestation/test-result/v0.1';
export const ATLAS_EXTENSION_VERSION = 1;

export interface ResourceDescriptor {
  name?: string;
  uri?: string;
  digest?: Record<string, string>;
  content?: string;
  mediaType?: string;
  annotations?: Record<string, unknown>;
}

export interface TestResult {
  result: 'PASSED' | 'WARNED' | 'FAILED';
  configuration: ResourceDescriptor[];
  passedTests: string[];
  warnedTests: string[];
  failedTests: string[];
}

export interface AtlasTaskRef {
  id: string;
  /** The task's key derivation index (its receipts' key paths). */
  index: number | null;
  workspace_id: string;
  template?: string;
  branch?: string;
}

export interface AtlasExtension {
  version: typeof ATLAS_EXTENSION_VERSION;
  task: AtlasTaskRef;
  step: string;
  commit: string;
  /** The commit's tree, read from the repository at export; null when it was not available. */
  tree: string | null;
  /** Whether the task's control-path changes were approved (its last signed control review). */
  control_paths: ControlPathState;
  /** The step's receipts on this commit, whole and in order, as hook.json holds them. */
  receipts: ValidationReceipt[];
}

export interface AtlasStatement {
  _type: typeof STATEMENT_TYPE;
  subject: ResourceDescriptor[];
  predicateType: typeof TEST_RESULT_PREDICATE_TYPE;
  predicate: TestResult & { atlas: AtlasExtension };
}

/** A receipt can be attested to a commit only when it signs the commit, made on a clean tree. */
export function attestable(receipt: ValidationReceipt): boolean {
  return signsCommit(receipt) && receipt.git_dirty === false && typeof receipt.git_commit === 'string';
}

/**
 * The test-result fields from a step's receipts: each distinct command is a test whose last run
 * (by completion time) decides it; PASSED only when every one passed. Control reviews are no tests:
 * they are left out (control_paths tells them).
 */
export function testResultOf(receipts: ValidationReceipt[]): TestResult {
  const last = new Map<string, ValidationReceipt>();
  const ordered = [...receipts].sort((a, b) => Date.parse(a.completed_at) - Date.parse(b.completed_at));
  for (const r of ordered) if (!isControlReview(r)) last.set(r.command, r);
  const configuration: ResourceDescriptor[] = [];
  const passedTests: string[] = [];
  const failedTests: string[] = [];
  for (const [command, r] of last) {
    configuration.push({
      name: command,
      digest: { sha256: createHash('sha256').update(command, 'utf8').digest('hex') },
      annotations: {
        executable: r.executable ?? null,
        execution_mode: r.execution_mode ?? null,
        validation_tree: r.validation_tree ?? null,
        dependencies: r.dependencies ?? null,
      },
    });
    (r.exit_code === 0 ? passedTests : failedTests).push(command);
  }
  return { result: failedTests.length === 0 ? 'PASSED' : 'FAILED', configuration, passedTests, warnedTests: [], failedTests };
}

/** The subjects: the commit, and its tree when known, by their git object ids. */
export function subjectsOf(commit: string, tree: string | null): ResourceDescriptor[] {
  const subjects: ResourceDescriptor[] = [{ name: 'commit', digest: { gitCommit: commit } }];
  if (tree !== null) subjects.push({ name: 'tree', digest: { gitTree: tree } });
  return subjects;
}

export function buildStatement(extension: Omit<AtlasExtension, 'version'>): AtlasStatement {
  return {
    _type: STATEMENT_TYPE,
    subject: subjectsOf(extension.commit, extension.tree),
    predicateType: TEST_RESULT_PREDICATE_TYPE,
    predicate: { ...testResultOf(extension.receipts), atlas: { version: ATLAS_EXTENSION_VERSION, ...extension } },
  };
}

export interface StepGroup {
  step: string;
  commit: string;
  receipts: ValidationReceipt[];
}

/**
 * Attestable receipts by step and commit, in order of first appearance; the rest counted apart.
 * Control reviews are no test results: they are left out of both (control_paths states them).
 */
export function groupForAttestation(receipts: ValidationReceipt[]): { groups: StepGroup[]; skipped: ValidationReceipt[] } {
  const groups = new Map<string, StepGroup>();
  const skipped: ValidationReceipt[] = [];
  for (const r of receipts) {
    if (isControlReview(r)) continue;
    if (!attestable(r)) {
      skipped.push(r);
      continue;
    }
    const key = `${r.step_name}\0${r.git_commit}`;
    let group = groups.get(key);
    if (!group) {
      group = { step: r.step_name, commit: r.git_commit!, receipts: [] };
      groups.set(key, group);
    }
    group.receipts.push(r);
  }
  return { groups: [...groups.values()], skipped };
}

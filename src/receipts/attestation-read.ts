// Reads DSSE envelopes of atlas's in-toto Statements (one JSON envelope, or JSON Lines of them) for
// `atlas verify`: what the signature covers, and every way the statement disagrees with itself.
// The signature is checked later, with the trusted key (verify.ts). Input that is not an envelope
// of an atlas statement is an AtlasError with exit 2; a statement that lies is invalid (exit 1).

import { ATLAS_EXTENSION_VERSION, attestable, STATEMENT_TYPE, TEST_RESULT_PREDICATE_TYPE, testResultOf } from '../domain/attestation.js';
import { controlPathProblems } from '../domain/attestation-control.js';
import { decodeBase64, envelopeShapeProblem, IN_TOTO_PAYLOAD_TYPE, preAuthEncoding } from '../domain/dsse.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { ReceiptProblem, ValidationReceipt } from '../domain/receipt.js';
import { isChildIndex, isGitCommit } from '../domain/receipt.js';
import { TASK_ID_PATTERN } from '../domain/task.js';
import { receiptShapeProblem } from './bundle.js';

export interface AttestationCheck {
  /** The bytes the envelope's signatures cover (DSSE pre-authentication encoding). */
  pae: Buffer;
  signatures: { keyid: string | undefined; sig: Buffer }[];
  /** What is wrong with the statement itself: each fails every receipt in it. */
  problems: ReceiptProblem[];
  step: string;
  commit: string;
  tree: string | null;
  /** 1-based line of the envelope in its file. */
  line: number;
}

export interface AttestedReceipts {
  taskId: string;
  taskIndex: number | undefined;
  receipts: ValidationReceipt[];
  attestation: AttestationCheck;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function malformed(source: string, line: number, problem: string): AtlasError {
  return new AtlasError(`${source} line ${line} is not an envelope of an atlas in-toto statement: ${problem}`, {
    exitCode: EXIT.input,
    hint: 'export it again with `atlas receipts export --format in-toto` (format: docs/keys-and-verification.md)',
  });
}

function statementProblems(statement: Obj, atlas: Obj, receipts: ValidationReceipt[]): ReceiptProblem[] {
  const problems: string[] = [];
  const commit = atlas['commit'];
  const tree = atlas['tree'];
  if (statement['_type'] !== STATEMENT_TYPE) problems.push(`_type is ${JSON.stringify(statement['_type'])}, expected ${STATEMENT_TYPE}`);
  if (statement['predicateType'] !== TEST_RESULT_PREDICATE_TYPE)
    problems.push(`predicateType is ${JSON.stringify(statement['predicateType'])}, expected ${TEST_RESULT_PREDICATE_TYPE}`);
  if (atlas['version'] !== ATLAS_EXTENSION_VERSION)
    problems.push(`atlas.version is ${JSON.stringify(atlas['version'])}, this atlas reads ${ATLAS_EXTENSION_VERSION}`);
  if (!isGitCommit(commit)) problems.push('atlas.commit is not a full commit id');
  if (tree !== null && !isGitCommit(tree)) problems.push('atlas.tree is not a full tree id or null');
  const subjects = Array.isArray(statement['subject']) ? (statement['subject'] as unknown[]).filter(isObj) : [];
  const digests = (algo: string) =>
    subjects.flatMap((s) => (isObj(s['digest']) && s['digest'][algo] !== undefined ? [s['digest'][algo]] : []));
  const commits = digests('gitCommit');
  const trees = digests('gitTree');
  if (commits.length !== 1 || commits[0] !== commit)
    problems.push(`the subject names commit ${commits.map(String).join(', ') || 'none'}, the receipts were made on ${String(commit)}`);
  if (trees.length > 1 || (trees.length === 1 && trees[0] !== tree) || (trees.length === 0 && tree !== null))
    problems.push(`the subject names tree ${trees.map(String).join(', ') || 'none'}, atlas.tree is ${String(tree)}`);
  for (const r of receipts) {
    if (!attestable(r) || r.git_commit !== commit) problems.push(`${r.receipt_id} was not made on ${String(commit)} with a clean tree`);
    if (r.task_id !== (atlas['task'] as Obj)['id'] || r.step_name !== atlas['step'])
      problems.push(
        `${r.receipt_id} is of ${String(r.task_id)} step ${r.step_name}, the statement of ${String((atlas['task'] as Obj)['id'])} step ${String(atlas['step'])}`,
      );
  }
  const predicate = statement['predicate'] as Obj;
  const expected = testResultOf(receipts) as unknown as Obj;
  for (const field of ['result', 'configuration', 'passedTests', 'warnedTests', 'failedTests']) {
    if (JSON.stringify(predicate[field]) !== JSON.stringify(expected[field]))
      problems.push(`predicate.${field} does not match the receipts (${JSON.stringify(expected[field])})`);
  }
  problems.push(...controlPathProblems(atlas['control_paths'], String((atlas['task'] as Obj)['id'])));
  return problems.map((message) => ({ check: 'format', field: 'statement', message: `statement: ${message}` }));
}

function readEnvelope(value: unknown, source: string, line: number): AttestedReceipts {
  const shape = envelopeShapeProblem(value);
  if (shape) throw malformed(source, line, shape);
  const envelope = value as Obj;
  if (envelope['payloadType'] !== IN_TOTO_PAYLOAD_TYPE)
    throw malformed(source, line, `payloadType is ${JSON.stringify(envelope['payloadType'])}, expected ${IN_TOTO_PAYLOAD_TYPE}`);
  const payload = decodeBase64(envelope['payload'] as string)!;
  let statement: unknown;
  try {
    statement = JSON.parse(payload.toString('utf8'));
  } catch (error) {
    throw malformed(source, line, `the payload is not JSON (${(error as Error).message})`);
  }
  const predicate = isObj(statement) ? statement['predicate'] : undefined;
  const atlas = isObj(predicate) ? predicate['atlas'] : undefined;
  if (!isObj(atlas)) throw malformed(source, line, 'no predicate.atlas (a statement atlas did not write?)');
  const task = atlas['task'];
  if (!isObj(task) || typeof task['id'] !== 'string' || !TASK_ID_PATTERN.test(task['id']))
    throw malformed(source, line, 'predicate.atlas.task.id: expected a task id');
  if (typeof atlas['step'] !== 'string') throw malformed(source, line, 'predicate.atlas.step: expected a string');
  if (!Array.isArray(atlas['receipts']) || atlas['receipts'].length === 0)
    throw malformed(source, line, 'predicate.atlas.receipts: expected a non-empty list');
  (atlas['receipts'] as unknown[]).forEach((r, i) => {
    const problem = receiptShapeProblem(r);
    if (problem) throw malformed(source, line, `predicate.atlas.receipts[${i}]: ${problem}`);
  });
  const receipts = atlas['receipts'] as ValidationReceipt[];
  // The control review the statement's control_paths stands on: checked, and read by the policies, as any receipt.
  const controlPaths = atlas['control_paths'];
  const review = isObj(controlPaths) ? controlPaths['review'] : undefined;
  const reviewProblem = review === undefined ? undefined : receiptShapeProblem(review);
  if (reviewProblem) throw malformed(source, line, `predicate.atlas.control_paths.review: ${reviewProblem}`);
  const signatures = (envelope['signatures'] as Obj[]).map((s) => ({
    keyid: s['keyid'] as string | undefined,
    sig: decodeBase64(s['sig'] as string)!,
  }));
  return {
    taskId: task['id'],
    taskIndex: isChildIndex(task['index']) ? task['index'] : undefined,
    receipts: review === undefined ? receipts : [...receipts, review as ValidationReceipt],
    attestation: {
      pae: preAuthEncoding(envelope['payloadType'] as string, payload),
      signatures,
      problems: statementProblems(statement as Obj, atlas, receipts),
      step: atlas['step'],
      commit: String(atlas['commit']),
      tree: typeof atlas['tree'] === 'string' ? atlas['tree'] : null,
      line,
    },
  };
}

/** `parsed`: the file as one JSON value when it is one; otherwise its text is read as JSON Lines. */
export function readAttestationFile(text: string, parsed: unknown, source: string): AttestedReceipts[] {
  if (parsed !== undefined) return [readEnvelope(parsed, source, 1)];
  const out: AttestedReceipts[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw malformed(source, i + 1, `not JSON (${(error as Error).message})`);
    }
    out.push(readEnvelope(value, source, i + 1));
  });
  return out;
}

/** Whether parsed JSON is a DSSE envelope (rather than a bundle or a hook). */
export function isEnvelope(value: unknown): boolean {
  return isObj(value) && 'payloadType' in value && 'signatures' in value;
}

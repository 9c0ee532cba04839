// Pure rules of receipts: the exact signed message (v1 seed, v2), field formats that keep the
// free-text command from shifting other fields, key paths, and the verify policies.
import { describe, expect, it } from 'vitest';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import {
  DEFAULT_KEY_DERIVATION,
  formatKeyPath,
  parseKeyPath,
  ReceiptFormatError,
  receiptFormatProblems,
  receiptKeyPath,
  receiptMessage,
  receiptTimeProblems,
  stepsBelowAccount,
} from '../src/domain/receipt.js';
import { evaluatePolicies } from '../src/domain/receipt-policy.js';

const H1 = 'a'.repeat(64);
const H2 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'; // gitleaks:allow (SHA-256 of "")
const COMMIT = '0123456789abcdef0123456789abcdef01234567';

function v1(over: Partial<ValidationReceipt> = {}): ValidationReceipt {
  return {
    receipt_id: 'rcpt-00000001',
    step_name: 'analyze',
    command: 'magex lint',
    exit_code: 0,
    started_at: '2026-01-17T14:35:00Z',
    completed_at: '2026-01-17T14:35:12Z',
    duration: '12.3s',
    stdout_hash: H1,
    stderr_hash: H2,
    key_path: "m/44'/236'/0'/0/0",
    signature: '3045',
    ...over,
  };
}

function v2(over: Partial<ValidationReceipt> = {}): ValidationReceipt {
  return v1({ message_version: 2, task_id: 'task-20260117-143022', step_name: 'validate', git_commit: COMMIT, git_dirty: false, ...over });
}

describe('receipt message', () => {
  it('is the seed message for version 1 receipts (no message_version)', () => {
    expect(receiptMessage(v1())).toBe(`rcpt-00000001|magex lint|0|${H1}|${H2}|1768660512`);
  });

  it('appends task, step, commit and dirty flag for version 2', () => {
    expect(receiptMessage(v2())).toBe(`rcpt-00000001|magex lint|0|${H1}|${H2}|1768660512|task-20260117-143022|validate|${COMMIT}|false`);
    expect(receiptMessage(v2({ git_commit: undefined, git_dirty: true }))).toMatch(/\|validate\|\|true$/);
  });

  it('uses whole seconds of completed_at in any offset', () => {
    expect(receiptMessage(v1({ completed_at: '2026-01-17T15:35:12.900+01:00' }))).toContain('|1768660512');
  });

  it('keeps pipes in the command without letting it shift other fields', () => {
    const tricky = v1({ command: `x|1|${H1}|${H1}|1` });
    expect(receiptMessage(tricky)).toBe(`rcpt-00000001|x|1|${H1}|${H1}|1|0|${H1}|${H2}|1768660512`);
    expect(receiptMessage(tricky)).not.toBe(receiptMessage(v1({ command: 'x', exit_code: 1, stdout_hash: H1, stderr_hash: H1 })));
  });

  it.each([
    ['receipt_id', { receipt_id: 'rcpt-0000000g' }],
    ['receipt_id', { receipt_id: 'rcpt-1|2' }],
    ['exit_code', { exit_code: 1.5 }],
    ['exit_code', { exit_code: '0' as unknown as number }],
    ['stdout_hash', { stdout_hash: 'a1b2c3d4e5f6...' }],
    ['stderr_hash', { stderr_hash: H2.toUpperCase() }],
    ['completed_at', { completed_at: 'yesterday' }],
    ['started_at', { started_at: '2026-13-45' }],
    ['message_version', { message_version: 5 as 2 }],
  ])('refuses a malformed %s', (field, over) => {
    const problems = receiptFormatProblems(v1(over));
    expect(problems.map((p) => p.field)).toContain(field);
    expect(() => receiptMessage(v1(over))).toThrow(ReceiptFormatError);
  });

  it.each([
    ['task_id', { task_id: 'task-x' }],
    ['task_id', { task_id: undefined }],
    ['step_name', { step_name: 'a|b' }],
    ['step_name', { step_name: 'line\nbreak' }],
    ['step_name', { step_name: '' }],
    ['git_commit', { git_commit: 'abc123' }],
    ['git_dirty', { git_dirty: undefined }],
  ])('refuses a malformed version-2 %s', (field, over) => {
    expect(receiptFormatProblems(v2(over)).map((p) => p.field)).toContain(field);
  });

  it('flags completed_at before started_at', () => {
    expect(receiptTimeProblems(v1({ completed_at: '2026-01-17T14:34:59Z' }), Date.now())[0]?.check).toBe('times');
    expect(receiptTimeProblems(v1(), Date.now())).toEqual([]);
  });
});

describe('key paths', () => {
  it("follows m/purpose'/coin_type'/account'/task/receipt", () => {
    expect(receiptKeyPath(DEFAULT_KEY_DERIVATION, 5, 0)).toBe("m/44'/236'/0'/5/0");
    expect(receiptKeyPath({ purpose: 1, coin_type: 2, account: 3 }, 4, 5)).toBe("m/1'/2'/3'/4/5");
  });

  it('parses and re-formats paths, and finds the part below the account', () => {
    const steps = parseKeyPath("m/44h/236'/0H/7/3")!;
    expect(formatKeyPath(steps)).toBe("m/44'/236'/0'/7/3");
    expect(stepsBelowAccount(steps, DEFAULT_KEY_DERIVATION)).toEqual([
      { index: 7, hardened: false },
      { index: 3, hardened: false },
    ]);
    expect(stepsBelowAccount(parseKeyPath("m/44'/236'/1'/7")!, DEFAULT_KEY_DERIVATION)).toBeUndefined();
    for (const bad of ['44/0', 'm/01', 'm/2147483648', "m/1''", 'm/-1', 'm/a']) expect(parseKeyPath(bad)).toBeUndefined();
  });
});

describe('policies', () => {
  const task = (receipts: Array<[ValidationReceipt, boolean]>) => [
    { taskId: 'task-20260117-143022', receipts: receipts.map(([receipt, valid]) => ({ receipt, valid })) },
  ];

  it('--require-step needs a valid passing version-2 receipt of the step', () => {
    expect(evaluatePolicies(task([[v2(), true]]), { requireSteps: ['validate'], requirePass: false })[0]!.ok).toBe(true);
    expect(evaluatePolicies(task([[v2({ exit_code: 1 }), true]]), { requireSteps: ['validate'], requirePass: false })[0]!.ok).toBe(false);
    expect(evaluatePolicies(task([[v2(), false]]), { requireSteps: ['validate'], requirePass: false })[0]!.ok).toBe(false);
    const v1only = evaluatePolicies(task([[v1({ step_name: 'validate' }), true]]), { requireSteps: ['validate'], requirePass: false })[0]!;
    expect(v1only.ok).toBe(false);
    expect(v1only.detail).toContain('not signed');
  });

  it('--commit counts only clean version-2 receipts on that commit', () => {
    const other = '1'.repeat(40);
    const on = (over: Partial<ValidationReceipt>) =>
      evaluatePolicies(task([[v2(over), true]]), { requireSteps: ['validate'], requirePass: false, commit: COMMIT });
    expect(on({}).every((p) => p.ok)).toBe(true);
    expect(on({ git_dirty: true }).every((p) => !p.ok)).toBe(true);
    expect(on({ git_commit: other }).every((p) => !p.ok)).toBe(true);
    expect(on({ git_dirty: true })[0]!.detail).toContain('uncommitted changes');
    expect(on({ git_commit: other })[0]!.detail).toContain(other.slice(0, 12));
  });

  it('--require-pass looks at the last run of each command', () => {
    const fixed = task([
      [v2({ exit_code: 1 }), true],
      [v2({ receipt_id: 'rcpt-00000002' }), true],
    ]);
    expect(evaluatePolicies(fixed, { requireSteps: [], requirePass: true })[0]!.ok).toBe(true);
    const broke = task([
      [v2(), true],
      [v2({ receipt_id: 'rcpt-00000002', exit_code: 2 }), true],
    ]);
    const result = evaluatePolicies(broke, { requireSteps: [], requirePass: true })[0]!;
    expect(result.ok).toBe(false);
    expect(result.detail).toContain('rcpt-00000002');
    expect(evaluatePolicies(task([]), { requireSteps: [], requirePass: true })[0]!.ok).toBe(false);
  });
});

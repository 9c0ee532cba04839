// GET /tasks/{id}/verify: the task's receipts checked as `atlas verify` checks them, with the
// public key of this server's atlas (ATLAS_XPUB, else $ATLAS_HOME/keys/account.xpub), for the
// board's marks: each receipt's signature and its command's exit status apart, and the strict
// policy (`--require-pass --require-step` each validation step of the task) met or not. Only the
// key's fingerprint is answered, never where it was read from.
import type { Config } from '../../config/schema.js';
import { loadReceiptSets } from '../../receipts/inputs.js';
import { resolveXpubText } from '../../receipts/trusted-key.js';
import { readTask } from '../../store/task-store.js';

export interface TaskVerification {
  /** Every signature valid (what `atlas verify` without policy flags checks). */
  ok: boolean;
  key_fingerprint: string | null;
  problems: string[];
  receipts: {
    receipt_id: string;
    step_name: string;
    command: string;
    exit_code: number;
    valid: boolean;
    passed: boolean;
    problems: string[];
  }[];
  /** The strict policy: its flags as `atlas verify` takes them, met or not, and each policy's verdict. */
  strict: { flags: string[]; ok: boolean; policies: { name: string; ok: boolean; detail: string }[] } | null;
}

export async function verifyTask(home: string, config: Config, dir: string): Promise<TaskVerification> {
  let text: string;
  try {
    text = resolveXpubText({}, home).text;
  } catch {
    return {
      ok: false,
      key_fingerprint: null,
      problems: ['no public key to verify with on this server (atlas key export, ATLAS_XPUB)'],
      receipts: [],
      strict: null,
    };
  }
  const [{ parseAccountXpub }, { verifyReceiptSets }] = await Promise.all([
    import('../../crypto/hd.js'),
    import('../../receipts/verify.js'),
  ]);
  const node = parseAccountXpub(text, 'the account key');
  const steps = readTask(dir)
    .steps.filter((s) => s.type === 'validation')
    .map((s) => s.name);
  const sets = loadReceiptSets([dir], { cwd: dir, home, derivation: config.hooks.key_derivation });
  const report = await verifyReceiptSets(
    sets,
    { account: { node, source: 'the account key' } },
    { requireSteps: steps, requirePass: true, requireCommands: [], allowEmpty: true, requireSandbox: false, requirePristine: false },
  );
  const set = report.sets[0];
  const results = set?.results ?? [];
  const signaturesOk = results.every((r) => r.valid) && (set?.problems.length ?? 0) === 0;
  const policies = report.policies.map((p) => ({ name: p.name, ok: p.ok, detail: p.detail }));
  if (results.length === 0) policies.push({ name: 'receipts', ok: false, detail: 'no receipts: nothing proves what this task ran' });
  return {
    ok: signaturesOk,
    key_fingerprint: report.key.fingerprint,
    problems: set?.problems ?? [],
    receipts: results.map((r) => ({
      receipt_id: r.receipt.receipt_id,
      step_name: r.receipt.step_name,
      command: r.receipt.command,
      exit_code: r.receipt.exit_code,
      valid: r.valid,
      passed: r.receipt.exit_code === 0,
      problems: r.problems.map((p) => `${p.check}: ${p.message}`),
    })),
    strict: {
      flags: ['--require-pass', ...steps.flatMap((s) => ['--require-step', s])],
      ok: signaturesOk && policies.every((p) => p.ok),
      policies,
    },
  };
}

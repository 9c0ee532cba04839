// GET /tasks/{id}/verify: the task's receipts checked as `atlas verify` checks them, with the
// public key of this server's atlas (ATLAS_XPUB, else $ATLAS_HOME/keys/account.xpub), for the
// board's ✓/✗. Only the key's fingerprint is answered, never where it was read from.
import type { Config } from '../../config/schema.js';
import { loadReceiptSets } from '../../receipts/inputs.js';
import { resolveXpubText } from '../../receipts/trusted-key.js';

export interface TaskVerification {
  ok: boolean;
  key_fingerprint: string | null;
  problems: string[];
  receipts: { receipt_id: string; step_name: string; command: string; exit_code: number; valid: boolean; problems: string[] }[];
}

export async function verifyTask(home: string, config: Config, dir: string): Promise<TaskVerification> {
  let text: string;
  try {
    text = resolveXpubText({}, home).text;
  } catch {
    return { ok: false, key_fingerprint: null, problems: ['no public key to verify with on this server (atlas key export, ATLAS_XPUB)'], receipts: [] };
  }
  const [{ parseAccountXpub }, { verifyReceiptSets }] = await Promise.all([import('../../crypto/hd.js'), import('../../receipts/verify.js')]);
  const node = parseAccountXpub(text, 'the account key');
  const sets = loadReceiptSets([dir], { cwd: dir, home, derivation: config.hooks.key_derivation });
  const report = await verifyReceiptSets(sets, { account: { node, source: 'the account key' } }, { requireSteps: [], requirePass: false, requireCommands: [], allowEmpty: true, requireSandbox: false, requirePristine: false });
  const set = report.sets[0];
  return {
    ok: report.ok,
    key_fingerprint: report.key.fingerprint,
    problems: set?.problems ?? [],
    receipts: (set?.results ?? []).map((r) => ({ receipt_id: r.receipt.receipt_id, step_name: r.receipt.step_name, command: r.receipt.command, exit_code: r.receipt.exit_code, valid: r.valid, problems: r.problems.map((p) => `${p.check}: ${p.message}`) })),
  };
}

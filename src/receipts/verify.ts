// `atlas verify`'s engine: every receipt of every input checked at its position with the trusted
// account key, then the policies. Imports the crypto libraries (load it dynamically).
import type { PolicyResult, VerifyPolicies } from '../domain/receipt-policy.js';
import { evaluatePolicies } from '../domain/receipt-policy.js';
import type { KeyDerivation } from '../domain/receipt.js';
import { accountPath } from '../domain/receipt.js';
import { AccountVerifier } from '../crypto/account-verifier.js';
import type { HDKey } from '../crypto/hd.js';
import { accountIndexOf, fingerprintHex } from '../crypto/hd.js';
import type { ReceiptResult } from './check.js';
import { ArtifactHasher, checkReceipt } from './check.js';
import type { InputKind, ReceiptSet } from './inputs.js';

export interface SetReport {
  source: string;
  kind: InputKind;
  taskId: string;
  taskIndex: number | undefined;
  keyPathPrefix: string;
  results: ReceiptResult[];
  /** Problems of the set as a whole (they fail verification). */
  problems: string[];
  /** Worth knowing, not failures. */
  notes: string[];
}

export interface VerifyReport {
  ok: boolean;
  key: { fingerprint: string; source: string };
  sets: SetReport[];
  policies: PolicyResult[];
  summary: { tasks: number; receipts: number; valid: number; invalid: number; policies: number; unmet: number };
}

export interface TrustedKey {
  node: HDKey;
  source: string;
}

export function verifyReceiptSets(sets: ReceiptSet[], key: TrustedKey, policies: VerifyPolicies): VerifyReport {
  const fingerprint = fingerprintHex(key.node);
  const account = accountIndexOf(key.node);
  const verifiers = new Map<string, AccountVerifier>();
  const verifierFor = (d: KeyDerivation) => {
    const id = accountPath(d);
    let v = verifiers.get(id);
    if (!v) verifiers.set(id, (v = new AccountVerifier(key.node, d)));
    return v;
  };
  const hasher = new ArtifactHasher();
  const owners = new Map<number, string>();

  const reports: SetReport[] = sets.map((set) => {
    const report: SetReport = {
      source: set.source,
      kind: set.kind,
      taskId: set.taskId,
      taskIndex: set.taskIndex,
      keyPathPrefix: accountPath(set.derivation),
      results: [],
      problems: [],
      notes: [],
    };
    if (set.claimedFingerprint !== undefined && set.claimedFingerprint !== fingerprint) {
      report.notes.push(`exported with key ${set.claimedFingerprint}, verified with ${fingerprint} (${key.source})`);
    }
    if (set.derivation.account !== account) {
      report.notes.push(`key paths use account ${set.derivation.account}', the xpub is account ${account}'`);
    }
    if (set.taskIndex === undefined) return report; // no receipts (the loader ensures it)
    const owner = owners.get(set.taskIndex);
    if (owner !== undefined && owner !== set.taskId) {
      report.problems.push(`task index ${set.taskIndex} is also claimed by ${owner}: task indexes are never shared`);
    } else {
      owners.set(set.taskIndex, set.taskId);
    }
    const verifier = verifierFor(set.derivation);
    const ref = { taskId: set.taskId, taskIndex: set.taskIndex, artifactsBase: set.artifactsBase };
    report.results = set.receipts.map((receipt, index) => checkReceipt(verifier, ref, receipt, index, hasher));
    return report;
  });

  const policyResults = evaluatePolicies(
    reports.map((r) => ({ taskId: r.taskId, receipts: r.results.map((x) => ({ receipt: x.receipt, valid: x.valid && r.problems.length === 0 })) })),
    policies,
  );
  const all = reports.flatMap((r) => r.results);
  const valid = all.filter((r) => r.valid).length;
  const unmet = policyResults.filter((p) => !p.ok).length;
  const setProblems = reports.some((r) => r.problems.length > 0);
  return {
    ok: valid === all.length && unmet === 0 && !setProblems,
    key: { fingerprint, source: key.source },
    sets: reports,
    policies: policyResults,
    summary: { tasks: reports.length, receipts: all.length, valid, invalid: all.length - valid, policies: policyResults.length, unmet },
  };
}

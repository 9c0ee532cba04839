// `atlas verify`'s engine: every receipt of every input checked at its position with the trusted
// account key, then the policies. Imports the crypto libraries (load it dynamically).

import type { HDKey } from '../crypto/hd.js';
import { accountIndexOf, fingerprintHex } from '../crypto/hd.js';
import { accountPath } from '../domain/receipt.js';
import type { CheckedReceipt, CheckedTask, PolicyResult, VerifyPolicies } from '../domain/receipt-policy.js';
import { evaluatePolicies } from '../domain/receipt-policy.js';
import type { TrustedAttestationKey } from './attestation-check.js';
import { checkAttestationSet } from './attestation-check.js';
import type { ReceiptResult } from './check.js';
import { ArtifactHasher } from './check.js';
import type { CheckJob } from './check-sets.js';
import { checkJobs } from './check-sets.js';
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
  /** The account key receipts were checked with (fingerprint "-" when only attestations were given). */
  key: { fingerprint: string; source: string };
  /** The attestation key envelopes were checked with, when there were envelopes. */
  attestation_key?: { keyid: string; source: string };
  sets: SetReport[];
  policies: PolicyResult[];
  summary: { tasks: number; receipts: number; valid: number; invalid: number; policies: number; unmet: number };
}

export interface TrustedKey {
  node: HDKey;
  source: string;
}

export interface TrustedKeys {
  /** Needed for receipts (hook.json, tasks, bundles). */
  account?: TrustedKey;
  /** Needed for attestation envelopes. */
  attestation?: TrustedAttestationKey;
}

/**
 * The policies' view: one entry per task, however many inputs hold it (a task's envelopes, one per
 * step and commit, each carrying its last control review), each receipt once: valid only when
 * every copy is. Bundles and envelopes of a task are then judged alike.
 */
export function policyTasks(reports: SetReport[]): CheckedTask[] {
  const tasks = new Map<string, Map<string, CheckedReceipt>>();
  for (const r of reports) {
    let receipts = tasks.get(r.taskId);
    if (!receipts) {
      receipts = new Map();
      tasks.set(r.taskId, receipts);
    }
    for (const x of r.results) {
      const valid = x.valid && r.problems.length === 0;
      const seen = receipts.get(x.receipt.receipt_id);
      receipts.set(x.receipt.receipt_id, { receipt: x.receipt, valid: valid && (seen?.valid ?? true) });
    }
  }
  return [...tasks].map(([taskId, receipts]) => ({ taskId, receipts: [...receipts.values()] }));
}

export async function verifyReceiptSets(sets: ReceiptSet[], keys: TrustedKeys, policies: VerifyPolicies): Promise<VerifyReport> {
  const key = keys.account;
  const fingerprint = key ? fingerprintHex(key.node) : '-';
  const account = key ? accountIndexOf(key.node) : undefined;
  const hasher = new ArtifactHasher();
  const owners = new Map<number, string>();
  const jobs: CheckJob[] = [];
  const jobOf = new Map<SetReport, number>();

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
    if (set.attestation) {
      // The callers resolve the attestation key whenever an input holds envelopes.
      report.results = checkAttestationSet({ ...set, attestation: set.attestation }, keys.attestation!, hasher);
      report.notes.push(
        `${set.attestation.step} on ${set.attestation.commit.slice(0, 12)}${set.attestation.tree ? ` (tree ${set.attestation.tree.slice(0, 12)})` : ''}, envelope line ${set.attestation.line}`,
      );
      return report;
    }
    if (set.claimedFingerprint !== undefined && set.claimedFingerprint !== fingerprint) {
      report.notes.push(`exported with key ${set.claimedFingerprint}, verified with ${fingerprint} (${key!.source})`);
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
    jobOf.set(report, jobs.length);
    jobs.push({
      taskId: set.taskId,
      taskIndex: set.taskIndex,
      derivation: set.derivation,
      receipts: set.receipts,
      artifactsBase: set.artifactsBase,
    });
    return report;
  });

  const outcomes = jobs.length > 0 ? await checkJobs(jobs, key!.node) : [];
  for (const report of reports) {
    const j = jobOf.get(report);
    if (j === undefined) continue;
    const receipts = jobs[j]!.receipts;
    report.results = outcomes[j]!.map((outcome, i): ReceiptResult => ({ ...outcome, receipt: receipts[i]! }));
  }

  const policyResults = evaluatePolicies(policyTasks(reports), policies);
  const all = reports.flatMap((r) => r.results);
  const valid = all.filter((r) => r.valid).length;
  const unmet = policyResults.filter((p) => !p.ok).length;
  const setProblems = reports.some((r) => r.problems.length > 0);
  return {
    ok: valid === all.length && unmet === 0 && !setProblems,
    key: { fingerprint, source: key?.source ?? 'none (attestations only)' },
    ...(keys.attestation ? { attestation_key: { keyid: keys.attestation.keyid, source: keys.attestation.source } } : {}),
    sets: reports,
    policies: policyResults,
    summary: { tasks: reports.length, receipts: all.length, valid, invalid: all.length - valid, policies: policyResults.length, unmet },
  };
}

// Checks the receipts of one attestation envelope: the envelope's signature with the trusted
// attestation key, the statement's agreement with itself, then each receipt as any other (format,
// task, times, artifacts) through checkReceipt, so the policies see the same results.
import type { KeyObject } from 'node:crypto';
import { verifyAttestation } from '../crypto/attestation-key.js';
import type { ReceiptVerifier } from '../crypto/signer.js';
import type { ReceiptProblem, ValidationReceipt } from '../domain/receipt.js';
import { receiptFormatProblems } from '../domain/receipt.js';
import type { AttestationCheck } from './attestation-read.js';
import type { ArtifactHasher, ReceiptResult } from './check.js';
import { checkReceipt } from './check.js';

export interface TrustedAttestationKey {
  key: KeyObject;
  keyid: string;
  source: string;
}

export interface AttestationSetInput {
  taskId: string;
  receipts: ValidationReceipt[];
  artifactsBase: string | undefined;
  attestation: AttestationCheck;
}

export function checkAttestationSet(set: AttestationSetInput, trusted: TrustedAttestationKey, hasher: ArtifactHasher): ReceiptResult[] {
  const a = set.attestation;
  const signed = a.signatures.some((s) => verifyAttestation(trusted.key, a.pae, s.sig));
  const envelopeProblems: ReceiptProblem[] = signed
    ? a.problems
    : [
        {
          check: 'signature',
          field: 'signatures',
          message: `the envelope (line ${a.line}) is not signed by attestation key ${trusted.keyid.slice(0, 16)}… (${trusted.source}): its payload changed, or another key signed it`,
        },
        ...a.problems,
      ];
  const verifier: ReceiptVerifier = {
    fingerprint: trusted.keyid,
    keyPath: () => '',
    // The envelope's signature stands for every receipt in it; the receipt keys are not used here.
    verify: (receipt) => [...receiptFormatProblems(receipt), ...envelopeProblems],
  };
  const ref = { taskId: set.taskId, taskIndex: 0, artifactsBase: set.artifactsBase };
  return set.receipts.map((receipt, index) => checkReceipt(verifier, ref, receipt, index, hasher));
}

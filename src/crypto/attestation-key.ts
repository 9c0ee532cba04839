// The attestation key: ECDSA P-256 (what cosign, in-toto, securesystemslib and openssl all accept),
// derived with SLIP-0010 from the same master seed as the receipt keys, so one backup restores both.
// Signing and verifying go through node:crypto (OpenSSL): DER signatures over SHA-256.

import type { KeyObject } from 'node:crypto';
import { createHash, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation } from '../domain/receipt.js';
import { HARDENED, P256_SEC1_CURVE as SEC1_CURVE, P256_SEC1_HEAD as SEC1_HEAD, slip10Derive, slip10Master } from './slip10.js';

/** Below the account: 1' for attestation keys, 0' the first of them (a rotated key would be 1'). */
const ATTESTATION_STEPS = [1, 0];

/** m/{purpose}'/{coin_type}'/{account}'/1'/0' on SLIP-0010's nist256p1 tree. */
export function attestationKeyPath(d: KeyDerivation): string {
  return `m/${d.purpose}'/${d.coin_type}'/${d.account}'/${ATTESTATION_STEPS.map((i) => `${i}'`).join('/')}`;
}

export interface AttestationPublicKey {
  key: KeyObject;
  /** Lowercase hex SHA-256 of the DER SubjectPublicKeyInfo: the envelope's keyid. */
  keyid: string;
  pem: string;
}

export interface AttestationSigningKey extends AttestationPublicKey {
  path: string;
  privateKey: KeyObject;
}

function describe(key: KeyObject): AttestationPublicKey {
  const der = key.export({ type: 'spki', format: 'der' });
  return { key, keyid: createHash('sha256').update(der).digest('hex'), pem: key.export({ type: 'spki', format: 'pem' }).toString() };
}

export function deriveAttestationKey(seed: Uint8Array, d: KeyDerivation): AttestationSigningKey {
  const steps = [d.purpose, d.coin_type, d.account, ...ATTESTATION_STEPS].map((i) => i + HARDENED);
  const node = slip10Derive(slip10Master(seed), steps);
  const privateKey = createPrivateKey({ key: Buffer.concat([SEC1_HEAD, node.privateKey, SEC1_CURVE]), format: 'der', type: 'sec1' });
  return { ...describe(createPublicKey(privateKey)), path: attestationKeyPath(d), privateKey };
}

/** DER ECDSA signature of SHA-256(data). */
export function signAttestation(key: AttestationSigningKey, data: Uint8Array): Buffer {
  return sign('sha256', data, key.privateKey);
}

export function verifyAttestation(key: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify('sha256', data, key, signature);
  } catch {
    return false; // not DER, or not a signature this key could make
  }
}

/** A P-256 public key in PEM (`atlas key export --format pem --for attestations`); exit 3 otherwise. */
export function parseAttestationPublicKey(text: string, source: string): AttestationPublicKey {
  const hint = 'pass the output of `atlas key export --format pem --for attestations`';
  if (/PRIVATE KEY/.test(text))
    throw new AtlasError(`${source} holds a private key; verification needs only the public key`, { exitCode: EXIT.key, hint });
  let key: KeyObject;
  try {
    key = createPublicKey({ key: text, format: 'pem' });
  } catch (error) {
    throw new AtlasError(`${source} is not a PEM public key: ${(error as Error).message}`, { exitCode: EXIT.key, hint });
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new AtlasError(
      `${source} is not a P-256 key (${key.asymmetricKeyType}${key.asymmetricKeyDetails?.namedCurve ? ` ${key.asymmetricKeyDetails.namedCurve}` : ''}); attestations are signed with ECDSA P-256`,
      { exitCode: EXIT.key, hint },
    );
  }
  return describe(key);
}

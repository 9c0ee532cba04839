// HDReceiptSigner (seed 003): signs receipts with keys derived from the master key at
// m/{purpose}'/{coin_type}'/{account}'/{task_index}/{receipt_index}. ECDSA over secp256k1 of
// SHA-256(message), RFC 6979 deterministic, low-S, DER, lowercase hex: what openssl accepts.
import { createHash } from 'node:crypto';
import type { KeyDerivation, ReceiptProblem, UnsignedReceipt, ValidationReceipt } from '../domain/receipt.js';
import { isChildIndex, receiptMessage } from '../domain/receipt.js';
import { AccountVerifier } from './account-verifier.js';
import { secp256k1 } from './curve.js';
import { deriveAccount, HDKey } from './hd.js';
import type { ReceiptPosition, ReceiptSigner } from './signer.js';

/** DER signature (hex) of SHA-256(message) with a private key. */
export function signMessage(privateKey: Uint8Array, message: string): string {
  const digest = createHash('sha256').update(message, 'utf8').digest();
  const der = secp256k1.sign(digest, privateKey, { prehash: false, lowS: true, format: 'der' });
  return Buffer.from(der).toString('hex');
}

/** The signed receipt, fields in seed 003's order followed by atlas's additions. */
function withSignature(receipt: UnsignedReceipt, keyPath: string, signature: string): ValidationReceipt {
  const { receipt_id, step_name, command, exit_code, started_at, completed_at, duration, stdout_hash, stderr_hash, ...additions } = receipt;
  return {
    receipt_id,
    step_name,
    command,
    exit_code,
    started_at,
    completed_at,
    duration,
    stdout_hash,
    stderr_hash,
    key_path: keyPath,
    signature,
    ...additions,
  };
}

export class HDReceiptSigner implements ReceiptSigner {
  private readonly account: HDKey;
  private readonly verifier: AccountVerifier;

  constructor(master: HDKey, derivation: KeyDerivation) {
    this.account = deriveAccount(master, derivation);
    // Verification goes through the public account node only, as CI does.
    this.verifier = new AccountVerifier(HDKey.fromExtendedKey(this.account.publicExtendedKey), derivation);
  }

  get fingerprint(): string {
    return this.verifier.fingerprint;
  }

  get accountXpub(): string {
    return this.account.publicExtendedKey;
  }

  keyPath(position: ReceiptPosition): string {
    return this.verifier.keyPath(position);
  }

  sign(receipt: UnsignedReceipt, position: ReceiptPosition): ValidationReceipt {
    if (!isChildIndex(position.taskIndex) || !isChildIndex(position.receiptIndex)) {
      throw new RangeError(`task index ${position.taskIndex} and receipt index ${position.receiptIndex} must be 0..2^31-1`);
    }
    const message = receiptMessage(receipt);
    const key = this.account.deriveChild(position.taskIndex).deriveChild(position.receiptIndex);
    return withSignature(receipt, this.keyPath(position), signMessage(key.privateKey!, message));
  }

  verify(receipt: ValidationReceipt, position: ReceiptPosition): ReceiptProblem[] {
    return this.verifier.verify(receipt, position);
  }
}

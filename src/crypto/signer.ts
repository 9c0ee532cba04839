// The crypto seams of seed 003 (ReceiptSigner, KeyManager), adapted to TypeScript. Hook, engine and
// CLI code depend on these interfaces only; the HD secp256k1 implementation behind them
// (hd-signer.ts, account-verifier.ts) can be swapped without touching them.
import type { ReceiptProblem, UnsignedReceipt, ValidationReceipt } from '../domain/receipt.js';

/** Where a receipt sits: its task's never-reused index and its position in hook.receipts. */
export interface ReceiptPosition {
  taskIndex: number;
  receiptIndex: number;
}

/** Checks receipts with public keys only (what CI has). */
export interface ReceiptVerifier {
  /** The key path a receipt at this position must carry, e.g. "m/44'/236'/0'/5/0". */
  keyPath(position: ReceiptPosition): string;
  /**
   * Message fields well-formed, key_path equal to the path of `position`, signature valid for the
   * key at that path. Artifacts and task binding are checked by the caller. Empty list: valid.
   */
  verify(receipt: ValidationReceipt, position: ReceiptPosition): ReceiptProblem[];
  /** First 4 bytes of hash160 of the account public key, as 8 hex characters. */
  readonly fingerprint: string;
}

/** Signs receipts; created from the master key, so it can also verify what it signed. */
export interface ReceiptSigner extends ReceiptVerifier {
  /** Returns the receipt with key_path and signature filled in (throws ReceiptFormatError). */
  sign(receipt: UnsignedReceipt, position: ReceiptPosition): ValidationReceipt;
}

/** The master key's life: whether it exists, loading it (permissions checked), signers from it. */
export interface KeyManager {
  exists(): boolean;
  /** Reads and checks the master key; throws AtlasError (exit 3) when missing or unsafe. */
  load(): Promise<void>;
  /** A signer for the configured derivation; loads the key first when needed. */
  newSigner(): Promise<ReceiptSigner>;
}

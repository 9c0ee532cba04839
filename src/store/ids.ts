// Random ids: ckpt-/rcpt- plus 8 hex characters (seed 003).
import { randomBytes } from 'node:crypto';

export function newCheckpointId(): string {
  return `ckpt-${randomBytes(4).toString('hex')}`;
}

export function newReceiptId(): string {
  return `rcpt-${randomBytes(4).toString('hex')}`;
}

// BIP32 keys over secp256k1 (@scure/bip32, @noble/curves): the master node from its seed, the
// account node, extended public keys, fingerprints, PEM export. Loaded only by code that signs,
// verifies or shows keys (dynamic import elsewhere), never by quick read-only commands.
import { HARDENED_OFFSET, HDKey } from '@scure/bip32';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation, PathStep } from '../domain/receipt.js';
import { accountPath } from '../domain/receipt.js';
import { secp256k1 } from './curve.js';

export { HARDENED_OFFSET, HDKey };

export function masterFromSeed(seed: Uint8Array): HDKey {
  return HDKey.fromMasterSeed(seed);
}

export function deriveAccount(master: HDKey, d: KeyDerivation): HDKey {
  return master.derive(accountPath(d));
}

export function derivePath(node: HDKey, steps: PathStep[]): HDKey {
  let current = node;
  for (const step of steps) current = current.deriveChild(step.index + (step.hardened ? HARDENED_OFFSET : 0));
  return current;
}

/** BIP32 fingerprint (first 4 bytes of hash160 of the public key) as 8 hex characters. */
export function fingerprintHex(node: HDKey): string {
  return node.fingerprint.toString(16).padStart(8, '0');
}

/**
 * An account-level extended public key (depth 3: m/purpose'/coin_type'/account'), from a flag,
 * an environment variable or a file. Throws AtlasError (exit 3) saying what is wrong with it.
 */
export function parseAccountXpub(text: string, source: string): HDKey {
  const trimmed = text.trim();
  if (trimmed.length === 0)
    throw new AtlasError(`${source} is empty`, { exitCode: EXIT.key, hint: 'pass the output of `atlas key export`' });
  if (/^[xt]prv/.test(trimmed)) {
    throw new AtlasError(`${source} is a private extended key (xprv); verification needs only the public xpub`, {
      exitCode: EXIT.key,
      hint: 'never hand CI a private key: use the output of `atlas key export` (starts with xpub)',
    });
  }
  let node: HDKey;
  try {
    node = HDKey.fromExtendedKey(trimmed);
  } catch (error) {
    throw new AtlasError(`${source} is not a valid extended public key: ${(error as Error).message}`, {
      exitCode: EXIT.key,
      hint: 'pass the output of `atlas key export` (a line starting with xpub)',
    });
  }
  if (node.privateKey) {
    throw new AtlasError(`${source} holds a private key; verification needs only the public xpub`, {
      exitCode: EXIT.key,
      hint: 'use the output of `atlas key export`',
    });
  }
  if (node.depth !== 3 || node.index < HARDENED_OFFSET) {
    throw new AtlasError(
      `${source} is not an account-level xpub (depth ${node.depth}${node.index >= HARDENED_OFFSET ? '' : ', not hardened'}); receipts are verified with the key at m/purpose'/coin_type'/account'`,
      { exitCode: EXIT.key, hint: 'use the output of `atlas key export`' },
    );
  }
  return node;
}

/** The account index (without the hardened bit) an account xpub was derived at. */
export function accountIndexOf(node: HDKey): number {
  return node.index - HARDENED_OFFSET;
}

// SubjectPublicKeyInfo header for an uncompressed secp256k1 point (65 bytes):
// SEQUENCE { SEQUENCE { OID id-ecPublicKey 1.2.840.10045.2.1, OID secp256k1 1.3.132.0.10 }, BIT STRING }.
const SPKI_UNCOMPRESSED_PREFIX = Buffer.from('3056301006072a8648ce3d020106052b8104000a034200', 'hex');

/** DER SubjectPublicKeyInfo of a public key (compressed or not), uncompressed inside for the widest tool support. */
export function publicKeySpki(publicKey: Uint8Array): Buffer {
  const point = secp256k1.Point.fromBytes(publicKey).toBytes(false);
  return Buffer.concat([SPKI_UNCOMPRESSED_PREFIX, point]);
}

/** PEM "PUBLIC KEY" that openssl and other secp256k1 stacks read. */
export function publicKeyPem(publicKey: Uint8Array): string {
  const b64 = publicKeySpki(publicKey).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`;
}

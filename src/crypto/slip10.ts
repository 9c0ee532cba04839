// SLIP-0010 (github.com/satoshilabs/slips, slip-0010.md) for NIST P-256: BIP32-style keys from the
// same master seed as the secp256k1 receipt keys, but under a curve-specific HMAC key ("Nist256p1
// seed"), so the two trees share nothing but the seed. Private derivation only (what signing needs),
// with SLIP-0010's retry rules where BIP32 would skip an index.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { hmac } from '@noble/hashes/hmac.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';

const CURVE_KEY = new TextEncoder().encode('Nist256p1 seed');
const N = p256.Point.Fn.ORDER;
export const HARDENED = 0x80000000;

export interface Slip10Node {
  privateKey: Uint8Array;
  chainCode: Uint8Array;
  /** Compressed SEC1 public key (33 bytes). */
  publicKey: Uint8Array;
  /** First 4 bytes of hash160 of the parent's public key; 0 for the master. */
  parentFingerprint: number;
}

// SEC1 ECPrivateKey DER for P-256 without its public key: OpenSSL computes the point (fast, in C).
export const P256_SEC1_HEAD = Buffer.from('30310201010420', 'hex');
export const P256_SEC1_CURVE = Buffer.from('a00a06082a8648ce3d030107', 'hex');

/** Compressed SEC1 public key of a private scalar. */
export function p256PublicKey(privateKey: Uint8Array): Uint8Array {
  const key = createPrivateKey({ key: Buffer.concat([P256_SEC1_HEAD, privateKey, P256_SEC1_CURVE]), format: 'der', type: 'sec1' });
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  const y = Buffer.from(jwk.y!, 'base64url');
  return Uint8Array.from(Buffer.concat([Buffer.from([2 + (y[31]! & 1)]), Buffer.from(jwk.x!, 'base64url')]));
}

const toBig = (bytes: Uint8Array): bigint => BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
const toBytes32 = (n: bigint): Uint8Array => Uint8Array.from(Buffer.from(n.toString(16).padStart(64, '0'), 'hex'));

function node(privateKey: Uint8Array, chainCode: Uint8Array, parentFingerprint: number): Slip10Node {
  return { privateKey, chainCode, publicKey: p256PublicKey(privateKey), parentFingerprint };
}

/** The master node of a seed (16 to 64 bytes): retried with S := I while IL is 0 or >= n. */
export function slip10Master(seed: Uint8Array): Slip10Node {
  let data = seed;
  for (;;) {
    const I = hmac(sha512, CURVE_KEY, data);
    const k = toBig(I.subarray(0, 32));
    if (k !== 0n && k < N) return node(I.slice(0, 32), I.slice(32), 0);
    data = I;
  }
}

export function fingerprintOf(publicKey: Uint8Array): number {
  const h = ripemd160(sha256(publicKey));
  return ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
}

/** CKDpriv: index >= 2^31 is hardened. An invalid key retries with 0x01 || IR || ser32(i). */
export function slip10Child(parent: Slip10Node, index: number): Slip10Node {
  if (!Number.isInteger(index) || index < 0 || index > 0xffffffff) throw new RangeError(`child index ${index} is not 0..2^32-1`);
  const ser32 = Buffer.alloc(4);
  ser32.writeUInt32BE(index);
  const data = index >= HARDENED ? Buffer.concat([Buffer.from([0]), parent.privateKey, ser32]) : Buffer.concat([parent.publicKey, ser32]);
  let I = hmac(sha512, parent.chainCode, data);
  for (;;) {
    const il = toBig(I.subarray(0, 32));
    const k = (il + toBig(parent.privateKey)) % N;
    if (il < N && k !== 0n) return node(toBytes32(k), I.slice(32), fingerprintOf(parent.publicKey));
    I = hmac(sha512, parent.chainCode, Buffer.concat([Buffer.from([1]), I.subarray(32), ser32]));
  }
}

/** Follows a path of indexes (hardened ones with HARDENED added). */
export function slip10Derive(master: Slip10Node, indexes: number[]): Slip10Node {
  return indexes.reduce(slip10Child, master);
}

// Verifies receipts with the account xpub alone (what CI holds).
//
// The receipt key is the non-hardened child K = K_task + t·G of the task node K_task, with
// t = IL of HMAC-SHA512(chain_task, K_task || receipt_index) (BIP32 public derivation). Rather than
// computing K for every receipt and running a generic ECDSA verify (two variable-base scalar
// multiplications), the check is rewritten over K_task, which is derived once per task and cached:
//   R = u1·G + u2·K = (u1 + u2·t)·G + u2·K_task,   u1 = e·s⁻¹, u2 = r·s⁻¹
// and the signature is valid iff R ≠ O and R.x mod n = r. This is exactly ECDSA verification
// against K (same equation, same result), with both multiplications on fixed bases whose tables
// are precomputed; tests cross-check it against @noble/curves' verify and openssl.
import { createHash, createHmac } from 'node:crypto';
import type { KeyDerivation, ReceiptProblem, ValidationReceipt } from '../domain/receipt.js';
import { isChildIndex, receiptFormatProblems, receiptKeyPath, receiptMessage, SIGNATURE_HEX_PATTERN } from '../domain/receipt.js';
import { secp256k1, widenGenerator } from './curve.js';
import type { HDKey } from './hd.js';
import { fingerprintHex } from './hd.js';
import type { ReceiptPosition, ReceiptVerifier } from './signer.js';

const Point = secp256k1.Point;
const Fn = Point.Fn;
const Fp = Point.Fp;
type CurvePoint = InstanceType<typeof Point>;

// Table sizes measured on the bench (bench/verify.mjs): a width-4 table for a task node pays off
// from about 8 receipts of that task; the generator's table (width 3 for a few receipts, see
// curve.ts) is widened to 6 from about fifty receipts and to 8 from a few hundred; wider tables
// cost more to build than they save.
const TASK_TABLE_FROM = 8;
const TASK_TABLE_WINDOW = 4;
const GENERATOR_TABLES = [
  { from: 500, window: 8 },
  { from: 50, window: 6 },
];

/** Widens the generator's table when a batch of receipts is about to be checked. */
export function prepareGenerator(receipts: number): void {
  const table = GENERATOR_TABLES.find((t) => receipts >= t.from);
  if (table) widenGenerator(table.window);
}

interface TaskNode {
  point: CurvePoint;
  /** The task key's private scalar, when the verifier was given the private account node (export). */
  secret: bigint | undefined;
  compressed: Buffer;
  chainCode: Buffer;
  uses: number;
  tabled: boolean;
}

function toBigInt(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

/**
 * Parses a lowercase-hex DER signature strictly: canonical DER only (re-encoding must give the
 * same bytes) and low-S, so no second encoding of the same signature verifies.
 */
export function parseSignature(hex: string): { r: bigint; s: bigint } | string {
  if (!SIGNATURE_HEX_PATTERN.test(hex)) return 'signature is not lowercase hex DER';
  const bytes = Buffer.from(hex, 'hex');
  let sig: ReturnType<typeof secp256k1.Signature.fromBytes>;
  try {
    sig = secp256k1.Signature.fromBytes(bytes, 'der');
  } catch {
    return 'signature is not valid DER';
  }
  if (!Buffer.from(sig.toBytes('der')).equals(bytes)) return 'signature is not canonical DER';
  if (sig.hasHighS()) return 'signature is not low-S';
  return { r: sig.r, s: sig.s };
}

/** R.x mod n == r, in projective coordinates (x = X/Z), so no field inversion is needed. */
function xMatches(R: CurvePoint, r: bigint): boolean {
  if (Fp.eql(R.X, Fp.mul(r, R.Z))) return true;
  // x in [n, p) reduces to r too: x = r + n.
  const rn = r + Fn.ORDER;
  return rn < Fp.ORDER && Fp.eql(R.X, Fp.mul(rn, R.Z));
}

export class AccountVerifier implements ReceiptVerifier {
  readonly fingerprint: string;
  private readonly tasks = new Map<number, TaskNode>();

  constructor(
    private readonly account: HDKey,
    readonly derivation: KeyDerivation,
  ) {
    this.fingerprint = fingerprintHex(account);
  }

  keyPath(position: ReceiptPosition): string {
    return receiptKeyPath(this.derivation, position.taskIndex, position.receiptIndex);
  }

  /** The task's public node, derived once from the xpub and cached by task index. */
  private taskNode(taskIndex: number): TaskNode {
    let node = this.tasks.get(taskIndex);
    if (!node) {
      const child = this.account.deriveChild(taskIndex);
      node = {
        point: Point.fromBytes(child.publicKey!),
        secret: child.privateKey ? toBigInt(child.privateKey) : undefined,
        compressed: Buffer.from(child.publicKey!),
        chainCode: Buffer.from(child.chainCode!),
        uses: 0,
        tabled: false,
      };
      this.tasks.set(taskIndex, node);
    }
    if (++node.uses === TASK_TABLE_FROM) this.tabulate(node, TASK_TABLE_FROM);
    return node;
  }

  private tabulate(node: TaskNode, uses: number): void {
    if (node.tabled || uses < TASK_TABLE_FROM || node.secret !== undefined) return;
    node.tabled = true;
    node.point.precompute(TASK_TABLE_WINDOW, false);
  }

  /** Announces how many receipts of a task are about to be checked, so its table fits the work. */
  expectReceipts(taskIndex: number, count: number): void {
    const node = this.taskNode(taskIndex);
    node.uses--;
    this.tabulate(node, count);
  }

  /** The BIP32 tweak of child `index` (scure's rule: an out-of-range IL moves on to the next index). */
  private tweak(node: TaskNode, index: number): bigint {
    for (let i = index; i <= 0x7fffffff; i++) {
      const data = Buffer.alloc(37);
      node.compressed.copy(data, 0);
      data.writeUInt32BE(i, 33);
      const t = toBigInt(createHmac('sha512', node.chainCode).update(data).digest().subarray(0, 32));
      if (Fn.isValid(t)) return t;
    }
    throw new Error(`no valid child key at or after index ${index}`);
  }

  /** Whether `signatureHex` signs `message` with the key at the position (or why not). */
  checkSignature(position: ReceiptPosition, message: string, signatureHex: string): true | string {
    const parsed = parseSignature(signatureHex);
    if (typeof parsed === 'string') return parsed;
    const { r, s } = parsed;
    const node = this.taskNode(position.taskIndex);
    const t = this.tweak(node, position.receiptIndex);
    const e = Fn.create(toBigInt(createHash('sha256').update(message, 'utf8').digest()));
    const w = Fn.inv(s);
    const u1 = Fn.create(Fn.create(e + r * t) * w);
    const u2 = Fn.create(r * w);
    let R: CurvePoint;
    if (node.secret === undefined) {
      R = Point.BASE.multiplyUnsafe(u1).add(node.point.multiplyUnsafe(u2));
    } else {
      // With the private key (export): the task key is d·G and u1 holds the receipt's tweak, so
      // u1·G + u2·(d·G) = (u1 + u2·d)·G, one multiplication by the tabled generator instead of
      // two (constant-time, as the scalar depends on d).
      const k = Fn.create(u1 + u2 * node.secret);
      if (k === 0n) return 'signature does not match the key at its key_path';
      R = Point.BASE.multiply(k);
    }
    return !R.is0() && xMatches(R, r) ? true : 'signature does not match the key at its key_path';
  }

  verify(receipt: ValidationReceipt, position: ReceiptPosition): ReceiptProblem[] {
    const problems = receiptFormatProblems(receipt);
    if (!isChildIndex(position.taskIndex) || !isChildIndex(position.receiptIndex)) {
      problems.push({
        check: 'key_path',
        message: `task index ${position.taskIndex} / receipt index ${position.receiptIndex} is not a non-hardened BIP32 index`,
      });
      return problems;
    }
    const expected = this.keyPath(position);
    if (receipt.key_path !== expected) {
      problems.push({
        check: 'key_path',
        field: 'key_path',
        message: `key_path ${JSON.stringify(receipt.key_path)} is not ${expected}, the path of receipt ${position.receiptIndex} of task index ${position.taskIndex} (moved or copied from elsewhere?)`,
      });
    }
    if (problems.some((p) => p.check === 'format')) return problems;
    if (typeof receipt.signature !== 'string') {
      problems.push({ check: 'signature', field: 'signature', message: 'signature is missing' });
      return problems;
    }
    // The signature is checked against the key of the expected position, never the claimed path.
    const result = this.checkSignature(position, receiptMessage(receipt), receipt.signature);
    if (result !== true) problems.push({ check: 'signature', field: 'signature', message: result });
    return problems;
  }
}

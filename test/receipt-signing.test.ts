// Signing and verifying receipts with HD keys: round trip, every signed field tamper-evident,
// positions and tasks bound through key_path, strict signatures, and the fast verifier agreeing
// with @noble/curves' own ECDSA verify on the derived child key.
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { HDKey } from '@scure/bip32';
import { beforeAll, describe, expect, it } from 'vitest';
import { AccountVerifier, parseSignature, prepareGenerator } from '../src/crypto/account-verifier.js';
import { generatorWindow } from '../src/crypto/curve.js';
import { parseAccountXpub } from '../src/crypto/hd.js';
import { HDReceiptSigner, signMessage } from '../src/crypto/hd-signer.js';
import type { UnsignedReceipt, ValidationReceipt } from '../src/domain/receipt.js';
import { DEFAULT_KEY_DERIVATION, receiptMessage } from '../src/domain/receipt.js';

const COMMIT = '0123456789abcdef0123456789abcdef01234567';

function unsigned(over: Partial<UnsignedReceipt> = {}): UnsignedReceipt {
  return {
    receipt_id: 'rcpt-1a2b3c4d',
    step_name: 'validate',
    command: 'npm test -- --reporter=dot | tee out.txt',
    exit_code: 0,
    started_at: '2026-01-17T14:35:00Z',
    completed_at: '2026-01-17T14:35:12Z',
    duration: '12.3s',
    stdout_hash: 'b'.repeat(64),
    stderr_hash: 'c'.repeat(64),
    message_version: 2,
    task_id: 'task-20260117-143022',
    git_commit: COMMIT,
    git_dirty: false,
    ...over,
  };
}

let signer: HDReceiptSigner;
let verifier: AccountVerifier;
let master: HDKey;

beforeAll(() => {
  master = HDKey.fromMasterSeed(randomBytes(32));
  signer = new HDReceiptSigner(master, DEFAULT_KEY_DERIVATION);
  verifier = new AccountVerifier(parseAccountXpub(signer.accountXpub, 'test'), DEFAULT_KEY_DERIVATION);
});

const at = (taskIndex: number, receiptIndex: number) => ({ taskIndex, receiptIndex });

describe('sign and verify', () => {
  it('round-trips with the account xpub alone', () => {
    const receipt = signer.sign(unsigned(), at(5, 0));
    expect(receipt.key_path).toBe("m/44'/236'/0'/5/0");
    expect(receipt.signature).toMatch(/^30[0-9a-f]+$/);
    expect(verifier.verify(receipt, at(5, 0))).toEqual([]);
    expect(signer.verify(receipt, at(5, 0))).toEqual([]);
  });

  it('writes seed fields first, in the seed order', () => {
    const receipt = signer.sign(unsigned(), at(1, 0));
    expect(Object.keys(receipt).slice(0, 11)).toEqual([
      'receipt_id',
      'step_name',
      'command',
      'exit_code',
      'started_at',
      'completed_at',
      'duration',
      'stdout_hash',
      'stderr_hash',
      'key_path',
      'signature',
    ]);
  });

  it('signs with the key at the path: the derived private key matches', () => {
    const receipt = signer.sign(unsigned(), at(7, 3));
    const child = master.derive("m/44'/236'/0'/7/3");
    const digest = sha256(new TextEncoder().encode(receiptMessage(receipt)));
    expect(secp256k1.verify(Buffer.from(receipt.signature, 'hex'), digest, child.publicKey!, { prehash: false, format: 'der' })).toBe(true);
  });

  const tampers: Array<[string, Partial<ValidationReceipt>]> = [
    ['receipt_id', { receipt_id: 'rcpt-1a2b3c4e' }],
    ['command', { command: 'npm test -- --reporter=dot | tee out.txt ' }],
    ['exit_code', { exit_code: 1 }],
    ['stdout_hash', { stdout_hash: `${'b'.repeat(63)}c` }],
    ['stderr_hash', { stderr_hash: `${'c'.repeat(63)}d` }],
    ['completed_at', { completed_at: '2026-01-17T14:35:13Z' }],
    ['task_id', { task_id: 'task-20260117-143023' }],
    ['step_name', { step_name: 'lint' }],
    ['git_commit', { git_commit: COMMIT.replace('0', '1') }],
    ['git_commit (removed)', { git_commit: undefined }],
    ['git_dirty', { git_dirty: true }],
    ['message_version (downgraded to 1)', { message_version: 1 }],
  ];

  it.each(tampers)('rejects a changed %s', (_field, change) => {
    const receipt = signer.sign(unsigned(), at(2, 4));
    const problems = verifier.verify({ ...receipt, ...change }, at(2, 4));
    expect(problems.map((p) => p.check)).toContain('signature');
  });

  it('rejects a changed signature (any byte) and a changed key_path', () => {
    const receipt = signer.sign(unsigned(), at(2, 4));
    for (let i = 8; i < receipt.signature.length; i += 10) {
      const sig =
        receipt.signature.slice(0, i) +
        ((Number.parseInt(receipt.signature[i]!, 16) + 1) % 16).toString(16) +
        receipt.signature.slice(i + 1);
      expect(verifier.verify({ ...receipt, signature: sig }, at(2, 4)).length, `byte ${i}`).toBeGreaterThan(0);
    }
    expect(verifier.verify({ ...receipt, key_path: "m/44'/236'/0'/2/5" }, at(2, 4)).map((p) => p.check)).toEqual(['key_path']);
  });

  it('rejects a receipt moved to another position or copied into another task', () => {
    const receipt = signer.sign(unsigned(), at(3, 1));
    expect(verifier.verify(receipt, at(3, 0)).map((p) => p.check)).toEqual(['key_path', 'signature']);
    expect(verifier.verify(receipt, at(4, 1)).map((p) => p.check)).toEqual(['key_path', 'signature']);
    // Even with key_path rewritten to fit the new place, the signature does not.
    expect(verifier.verify({ ...receipt, key_path: "m/44'/236'/0'/4/1" }, at(4, 1)).map((p) => p.check)).toEqual(['signature']);
  });

  it('rejects receipts under a different xpub', () => {
    const other = new HDReceiptSigner(HDKey.fromMasterSeed(randomBytes(32)), DEFAULT_KEY_DERIVATION);
    const receipt = other.sign(unsigned(), at(0, 0));
    expect(verifier.verify(receipt, at(0, 0)).map((p) => p.check)).toEqual(['signature']);
  });

  it('verifies a version-1 receipt (the seed message alone)', () => {
    const base = unsigned();
    const { message_version: _v, task_id: _t, git_commit: _c, git_dirty: _d, ...seedOnly } = base;
    const receipt = signer.sign(seedOnly, at(0, 2));
    expect(receiptMessage(receipt)).toBe(`rcpt-1a2b3c4d|${base.command}|0|${'b'.repeat(64)}|${'c'.repeat(64)}|1768660512`);
    expect(verifier.verify(receipt, at(0, 2))).toEqual([]);
    // Unsigned in version 1, so the step name can change without breaking it (policies ignore it).
    expect(verifier.verify({ ...receipt, step_name: 'other' }, at(0, 2))).toEqual([]);
  });

  it('accepts only canonical low-S DER signatures', () => {
    const receipt = signer.sign(unsigned(), at(1, 1));
    const sig = secp256k1.Signature.fromBytes(Buffer.from(receipt.signature, 'hex'), 'der');
    const n = secp256k1.Point.Fn.ORDER;
    const highS = new secp256k1.Signature(sig.r, n - sig.s).toHex('der');
    expect(parseSignature(highS)).toBe('signature is not low-S');
    expect(verifier.verify({ ...receipt, signature: highS }, at(1, 1)).map((p) => p.check)).toEqual(['signature']);
    expect(parseSignature(receipt.signature.toUpperCase())).toContain('hex');
    // Same r and s with a padded (non-minimal) length field: not canonical.
    const der = Buffer.from(receipt.signature, 'hex');
    const padded = Buffer.concat([Buffer.from([0x30, 0x81, der[1]!]), der.subarray(2)]).toString('hex');
    expect(typeof parseSignature(padded)).toBe('string');
  });

  it('refuses to sign a step name that could shift the message', () => {
    expect(() => signer.sign(unsigned({ step_name: 'a|b' }), at(0, 0))).toThrow(/step_name/);
  });
});

describe('fast verifier', () => {
  it("gives the same answers with the generator's table at each width a batch widens it to, never narrowing it", () => {
    const receipts = [0, 1, 2].map((i) => signer.sign(unsigned({ receipt_id: `rcpt-0000000${i}` }), at(9, i)));
    const forged = { ...receipts[0]!, exit_code: 1 };
    const answers = () => [...receipts.map((r, i) => verifier.verify(r, at(9, i)).length), verifier.verify(forged, at(9, 0)).length];
    const widths: number[] = [];
    for (const batch of [10, 60, 10, 600, 60]) {
      prepareGenerator(batch);
      widths.push(generatorWindow());
      expect(answers()).toEqual([0, 0, 0, 1]);
    }
    // A process that checked a batch before this file may have widened it already (shared workers).
    expect(widths.slice(3)).toEqual([8, 8]);
    expect(widths[1]).toBeGreaterThanOrEqual(6);
    expect(widths).toEqual([...widths].sort((a, b) => a - b));
  });

  it('agrees with @noble/curves verify on the derived child key, for valid and forged signatures', () => {
    const xpub = HDKey.fromExtendedKey(signer.accountXpub);
    for (let i = 0; i < 24; i++) {
      const taskIndex = i % 3;
      const receiptIndex = i;
      const message = `message ${i} ${randomBytes(4).toString('hex')}`;
      const child = master.derive(`m/44'/236'/0'/${taskIndex}/${receiptIndex}`);
      const good = signMessage(child.privateKey!, message);
      const wrongKey = signMessage(master.derive(`m/44'/236'/0'/${taskIndex}/${receiptIndex + 1}`).privateKey!, message);
      const pub = xpub.deriveChild(taskIndex).deriveChild(receiptIndex).publicKey!;
      for (const sig of [good, wrongKey]) {
        const reference = secp256k1.verify(Buffer.from(sig, 'hex'), sha256(new TextEncoder().encode(message)), pub, {
          prehash: false,
          format: 'der',
        });
        expect(verifier.checkSignature({ taskIndex, receiptIndex }, message, sig) === true).toBe(reference);
      }
      expect(verifier.checkSignature({ taskIndex, receiptIndex }, message, good)).toBe(true);
      expect(verifier.checkSignature({ taskIndex, receiptIndex }, `${message}.`, good)).not.toBe(true);
    }
  });
});

describe('account xpub input', () => {
  it('refuses private keys, wrong depths and garbage with exit code 3', () => {
    const cases = [master.privateExtendedKey, master.publicExtendedKey, master.derive("m/44'/236'/0'/1").publicExtendedKey, 'xpub123', ''];
    for (const text of cases) {
      let code: number | undefined;
      try {
        parseAccountXpub(text, '--xpub');
      } catch (error) {
        code = (error as { exitCode?: number }).exitCode;
      }
      expect(code, text.slice(0, 8)).toBe(3);
    }
  });
});

// SLIP-0010 for NIST P-256 against every nist256p1 test vector published in the spec (vendored
// verbatim in test/fixtures/slip10-nist256p1-vectors.json, source named there), retry cases included.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HARDENED, slip10Child, slip10Derive, slip10Master } from '../src/crypto/slip10.js';

interface Chain {
  path: string;
  fingerprint: string;
  chainCode: string;
  private: string;
  public: string;
}
const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'slip10-nist256p1-vectors.json'), 'utf8')) as {
  source: string;
  vectors: { title: string; seed: string; chains: Chain[] }[];
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const indexes = (path: string) =>
  path
    .split('/')
    .slice(1)
    .map((p) => (p.endsWith("'") ? Number(p.slice(0, -1)) + HARDENED : Number(p)));

describe('SLIP-0010 nist256p1', () => {
  it('has the published vectors', () => {
    expect(fixture.source).toContain('satoshilabs/slips');
    expect(fixture.vectors.map((v) => v.title)).toEqual([
      'Test vector 1 for nist256p1',
      'Test vector 2 for nist256p1',
      'Test derivation retry for nist256p1',
      'Test seed retry for nist256p1',
    ]);
  });

  for (const vector of fixture.vectors) {
    it(vector.title, () => {
      const master = slip10Master(Buffer.from(vector.seed, 'hex'));
      for (const chain of vector.chains) {
        const node = slip10Derive(master, indexes(chain.path));
        expect({
          path: chain.path,
          fingerprint: node.parentFingerprint.toString(16).padStart(8, '0'),
          chainCode: hex(node.chainCode),
          private: hex(node.privateKey),
          public: hex(node.publicKey),
        }).toEqual(chain);
      }
    });
  }

  it('refuses an index outside 0..2^32-1', () => {
    const master = slip10Master(Buffer.alloc(32, 1));
    expect(() => slip10Child(master, -1)).toThrow(/child index/);
    expect(() => slip10Child(master, 2 ** 32)).toThrow(/child index/);
    expect(() => slip10Child(master, 1.5)).toThrow(/child index/);
  });
});

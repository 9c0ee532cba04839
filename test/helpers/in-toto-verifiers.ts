// Verifiers of in-toto envelopes no one here wrote: Debian's python3-securesystemslib over the DSSE
// pre-authentication encoding, openssl over the same bytes, and the in-toto framework's schemas
// (test/fixtures/in-toto, written from the spec: see its README) under ajv.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { deriveAttestationKey, signAttestation } from '../../src/crypto/attestation-key.js';
import { readMasterSeed } from '../../src/crypto/key-files.js';
import { preAuthEncoding } from '../../src/domain/dsse.js';
import { DEFAULT_KEY_DERIVATION } from '../../src/domain/receipt.js';
import { tempDir } from './core-fixtures.js';

export const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'in-toto');
// Debian's interpreter: the one python3-securesystemslib is installed for (a pyenv python may shadow it).
export const PYTHON = '/usr/bin/python3';

export interface Envelope {
  payloadType: string;
  payload: string;
  signatures: { keyid: string; sig: string }[];
}

export const readLines = (path: string): Envelope[] =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Envelope);
export const statementOf = (e: Envelope) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8'));
export const pae = (e: Envelope) => {
  const body = Buffer.from(e.payload, 'base64');
  return Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(e.payloadType)} ${e.payloadType} ${body.length} `), body]);
};

export function writeLines(envelopes: Envelope[], name: string): string {
  const path = join(tempDir('atlas-att-'), name);
  writeFileSync(path, `${envelopes.map((e) => JSON.stringify(e)).join('\n')}\n`);
  return path;
}

export function securesystemslib(
  path: string,
  pem: string,
  commit: string,
): { code: number; lines: { line: number; accepted: boolean; reason: string }[] } {
  const run = spawnSync(PYTHON, [join(FIXTURES, 'verify_dsse.py'), path, pem, commit], { encoding: 'utf8' });
  if (run.stderr.trim()) throw new Error(run.stderr);
  return {
    code: run.status ?? -1,
    lines: run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  };
}

export function openssl(envelope: Envelope, pem: string): boolean {
  const dir = tempDir('atlas-att-ssl-');
  writeFileSync(join(dir, 'pae.bin'), pae(envelope));
  writeFileSync(join(dir, 'sig.der'), Buffer.from(envelope.signatures[0]!.sig, 'base64'));
  const run = spawnSync('openssl', ['dgst', '-sha256', '-verify', pem, '-signature', join(dir, 'sig.der'), join(dir, 'pae.bin')], {
    encoding: 'utf8',
  });
  return run.status === 0 && run.stdout.includes('Verified OK');
}

export function schemas() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const file of ['resource-descriptor-v1', 'statement-v1', 'test-result-v0.1'])
    ajv.addSchema(JSON.parse(readFileSync(join(FIXTURES, `${file}.schema.json`), 'utf8')));
  return {
    statement: ajv.getSchema('https://in-toto.io/schemas/statement-v1.json')!,
    testResult: ajv.getSchema('https://in-toto.io/schemas/test-result-v0.1.json')!,
  };
}

/** Re-signs a changed statement with the home's real attestation key (what only a bug or the key's owner could do). */
export function resigned(home: string, envelope: Envelope, change: (s: any) => void): Envelope {
  const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
  change(statement);
  const key = deriveAttestationKey(readMasterSeed(home), DEFAULT_KEY_DERIVATION);
  const payload = Buffer.from(JSON.stringify(statement));
  return {
    ...envelope,
    payload: payload.toString('base64'),
    signatures: [{ keyid: key.keyid, sig: signAttestation(key, preAuthEncoding(envelope.payloadType, payload)).toString('base64') }],
  };
}

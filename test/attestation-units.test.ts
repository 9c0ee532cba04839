// The attestation code in this process (the CLI tests run it in child processes): export, reading
// and checking envelopes, key resolution and parsing, the DSSE helpers, with real keys, tasks and
// git repositories.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deriveAttestationKey, parseAttestationPublicKey, signAttestation, verifyAttestation } from '../src/crypto/attestation-key.js';
import { exportAttestationKey } from '../src/crypto/key-export.js';
import { readMasterSeed } from '../src/crypto/key-files.js';
import { buildStatement, CONTROL_PATHS_NOT_RECORDED, groupForAttestation, testResultOf } from '../src/domain/attestation.js';
import { decodeBase64, envelopeShapeProblem, IN_TOTO_PAYLOAD_TYPE, preAuthEncoding } from '../src/domain/dsse.js';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import { DEFAULT_KEY_DERIVATION } from '../src/domain/receipt.js';
import { exportAttestations } from '../src/receipts/attestation-export.js';
import { readAttestationFile } from '../src/receipts/attestation-read.js';
import { loadReceiptSets } from '../src/receipts/inputs.js';
import { renderVerifyText, verifyJson } from '../src/receipts/report-text.js';
import { resolveAttestationKey } from '../src/receipts/trusted-key.js';
import { verifyReceiptSets } from '../src/receipts/verify.js';
import { createTask, git, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';

const D = DEFAULT_KEY_DERIVATION;
const POLICIES = {
  requireSteps: ['validate'],
  requirePass: true,
  requireCommands: [],
  allowEmpty: false,
  requireSandbox: false,
  requirePristine: false,
};

function envelopeLine(home: string, statement: unknown): string {
  const key = deriveAttestationKey(readMasterSeed(home), D);
  const payload = Buffer.from(JSON.stringify(statement));
  return JSON.stringify({
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    payload: payload.toString('base64'),
    signatures: [{ keyid: key.keyid, sig: signAttestation(key, preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload)).toString('base64') }],
  });
}

describe('attestations in process', () => {
  it('exports, reads back and verifies with the local key, and renders the report', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { command: 'npm test' });
    await recordRun(fx, { step: 'lint', command: 'npm run lint' });
    const out = await exportAttestations([fx.ref], home, D);
    expect(out).toMatchObject({ envelopes: 2, receipts: 2, skipped: [], key_path: "m/44'/236'/0'/1'/0'" });
    const file = join(tempDir('atlas-att-u-'), 'a.intoto.jsonl');
    writeFileSync(file, `\n${out.text}\n`);
    const sets = loadReceiptSets([file], { cwd: dir, home, derivation: D });
    expect(sets.map((s) => [s.kind, s.taskId, s.attestation?.step, s.attestation?.line])).toEqual([
      ['attestation', fx.ref.id, 'validate', 2],
      ['attestation', fx.ref.id, 'lint', 3],
    ]);
    const key = await resolveAttestationKey({}, home, D, {});
    const report = await verifyReceiptSets(sets, { attestation: key }, POLICIES);
    expect(report.ok).toBe(true);
    expect(renderVerifyText(report)).toMatch(/^attestations with key [0-9a-f]{16}… \(.*master\.key \(m\/44'\/236'\/0'\/1'\/0'\)\)/);
    expect(verifyJson(report)).toMatchObject({ key: { fingerprint: '-' }, attestation_key: { keyid: out.keyid } });
    expect(await exportAttestationKey(home, D)).toMatchObject({ keyid: out.keyid, curve: 'P-256' });
  });

  it('refuses envelopes under another key, and a forged hook.json at export', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test' });
    const out = await exportAttestations([fx.ref], home, D);
    const other = await homeWithKey();
    const sets = readAttestationFile(out.text, undefined, 'x').map((a) => ({
      ...a,
      source: 'x',
      kind: 'attestation' as const,
      derivation: D,
      artifactsBase: undefined,
    }));
    const report = await verifyReceiptSets(sets, { attestation: await resolveAttestationKey({}, other.home, D, {}) }, POLICIES);
    expect(report.ok).toBe(false);
    expect(report.sets[0]!.results[0]!.problems[0]).toMatchObject({ check: 'signature', field: 'signatures' });
    await expect(exportAttestationKey(tempDir(), D)).rejects.toThrow(/needs the master key/);

    const hookPath = join(fx.ref.dir, 'hook.json');
    const hook = JSON.parse(readFileSync(hookPath, 'utf8'));
    hook.receipts[0].command = 'true';
    writeFileSync(hookPath, JSON.stringify(hook));
    await expect(exportAttestations([fx.ref], home, D)).rejects.toThrow(
      /does not verify \(signature does not match the key at its key_path\): nothing was attested/,
    );
  });

  it('leaves the tree out when the repository no longer has the commit', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { command: 'npm test' });
    git(dir, 'commit', '-q', '--amend', '-m', 'rewritten');
    git(dir, 'reflog', 'expire', '--expire=now', '--all');
    git(dir, 'gc', '-q', '--prune=now');
    const out = await exportAttestations([fx.ref], home, D);
    const [set] = readAttestationFile(out.text, undefined, 'x');
    expect(set!.attestation).toMatchObject({ tree: null, problems: [] });
  });

  it('refuses to attest a receipt that does not verify, or when nothing can be attested', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    writeFileSync(join(dir, 'dirty.txt'), 'x');
    await recordRun(fx, { command: 'npm test' });
    await expect(exportAttestations([fx.ref], home, D)).rejects.toThrow(/nothing to attest/);
    await expect(exportAttestations([fx.ref], tempDir(), D)).rejects.toThrow(/no signing key/);
  });

  it('reports every way a statement disagrees with itself', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    const r = await recordRun(fx, { command: 'npm test' });
    const ok = buildStatement({
      task: { id: fx.ref.id, index: 0, workspace_id: 'demo' },
      step: 'validate',
      commit: r.git_commit!,
      tree: null,
      control_paths: CONTROL_PATHS_NOT_RECORDED,
      receipts: [r],
    });
    expect(readAttestationFile(envelopeLine(home, ok), undefined, 'x')[0]!.attestation.problems).toEqual([]);
    const other = 'b'.repeat(40);
    const cases: [(s: any) => void, string][] = [
      [(s) => s.subject.push({ digest: { gitCommit: other } }), 'the subject names commit'],
      [(s) => s.subject.push({ digest: { gitTree: other } }), 'the subject names tree'],
      [
        (s) => {
          s.subject = 'none';
        },
        'the subject names commit none',
      ],
      [
        (s) => {
          s.predicate.atlas.receipts[0].git_dirty = true;
        },
        'with a clean tree',
      ],
      [
        (s) => {
          s.predicate.atlas.task.id = 'task-20990101-000000';
        },
        'the statement of task-20990101-000000',
      ],
      [
        (s) => {
          s.predicate.failedTests = ['x'];
        },
        'predicate.failedTests does not match',
      ],
    ];
    for (const [change, message] of cases) {
      const s = structuredClone(ok);
      change(s);
      const problems = readAttestationFile(envelopeLine(home, s), undefined, 'x')[0]!.attestation.problems;
      expect(problems.map((p) => p.message).join('\n')).toContain(message);
    }
  });

  it('groups receipts by step and commit, and sums up each step from its last runs', () => {
    const base = {
      receipt_id: 'rcpt-00000000',
      command: 'npm test',
      exit_code: 0,
      started_at: '2026-01-17T00:00:00Z',
      completed_at: '2026-01-17T00:00:01Z',
      duration: '1s',
      stdout_hash: '0'.repeat(64),
      stderr_hash: '0'.repeat(64),
      key_path: '',
      signature: '',
      message_version: 2 as const,
      task_id: 'task-20260117-000000',
      git_dirty: false,
      git_commit: 'a'.repeat(40),
      step_name: 'v',
    };
    const later = { ...base, exit_code: 1, completed_at: '2026-01-17T00:00:09Z' };
    const receipts: ValidationReceipt[] = [
      later,
      base,
      { ...base, git_commit: 'c'.repeat(40) },
      { ...base, message_version: undefined },
      { ...base, git_commit: undefined },
    ];
    const { groups, skipped } = groupForAttestation(receipts);
    expect(groups.map((g) => [g.commit[0], g.receipts.length])).toEqual([
      ['a', 2],
      ['c', 1],
    ]);
    expect(skipped).toHaveLength(2);
    expect(testResultOf(groups[0]!.receipts)).toMatchObject({ result: 'FAILED', failedTests: ['npm test'], passedTests: [] });
    expect(testResultOf([base]).configuration[0]!.annotations).toEqual({
      executable: null,
      execution_mode: null,
      validation_tree: null,
      dependencies: null,
    });
  });

  it('resolves the attestation key from a flag, the environment or the master key, and refuses anything else', async () => {
    const { home } = await homeWithKey();
    const pem = (await exportAttestationKey(home, D)).pem;
    const file = join(tempDir('atlas-att-u-'), 'k.pem');
    writeFileSync(file, pem);
    expect((await resolveAttestationKey({ attestationKey: file }, tempDir(), D, {})).source).toBe(`--attestation-key ${file}`);
    expect((await resolveAttestationKey({}, tempDir(), D, { ATLAS_ATTESTATION_KEY: pem })).source).toBe('ATLAS_ATTESTATION_KEY');
    await expect(resolveAttestationKey({}, tempDir(), D, {})).rejects.toThrow(/no attestation key/);
    await expect(resolveAttestationKey({ attestationKey: join(tempDir(), 'none.pem') }, home, D, {})).rejects.toThrow(
      /cannot read the attestation key file .*ENOENT/,
    );
    const ed = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(() => parseAttestationPublicKey(ed, 'k')).toThrow(/not a P-256 key \(ed25519\)/);
    expect(() => parseAttestationPublicKey('-----BEGIN EC PRIVATE KEY-----', 'k')).toThrow(/holds a private key/);
    expect(() => parseAttestationPublicKey('nothing', 'k')).toThrow(/not a PEM public key/);
    const key = parseAttestationPublicKey(pem, 'k').key;
    expect(verifyAttestation(key, Buffer.from('x'), Buffer.from('not der'))).toBe(false);
  });

  it('reads DSSE envelopes strictly', () => {
    expect(preAuthEncoding('a/b', Buffer.from('héllo')).toString()).toBe('DSSEv1 3 a/b 6 héllo');
    expect(decodeBase64('aGk')?.toString()).toBe('hi');
    expect(decodeBase64('aGk_')).toBeDefined(); // URL-safe alphabet
    expect(decodeBase64('a')).toBeUndefined();
    expect(decodeBase64('a b')).toBeUndefined();
    expect(envelopeShapeProblem([])).toBe('expected a JSON object');
    expect(envelopeShapeProblem({ payloadType: 1 })).toBe('payloadType: expected a string');
    expect(envelopeShapeProblem({ payloadType: 'x', payload: 'aGk=', signatures: [{ sig: 'aGk=' }] })).toBeUndefined();
    expect(() => readAttestationFile('{}', {}, 'f')).toThrow(/f line 1 is not an envelope of an atlas in-toto statement: payloadType/);
    expect(() => readAttestationFile('{\n', undefined, 'f')).toThrow(/f line 1 .*: not JSON/);
    const envelope = { payloadType: IN_TOTO_PAYLOAD_TYPE, payload: Buffer.from('{').toString('base64'), signatures: [{ sig: 'aGk=' }] };
    expect(() => readAttestationFile('', envelope, 'f')).toThrow(/the payload is not JSON/);
    const shapes: [unknown, string][] = [
      [{ payloadType: 'x', payload: 1 }, 'payload: expected base64'],
      [{ payloadType: 'x', payload: 'aGk=', signatures: {} }, 'signatures: expected a non-empty list'],
      [{ payloadType: 'x', payload: 'aGk=', signatures: [null] }, 'signatures[0]: expected an object'],
      [{ payloadType: 'x', payload: 'aGk=', signatures: [{ sig: '%' }] }, 'signatures[0].sig: expected base64'],
      [{ payloadType: 'x', payload: 'aGk=', signatures: [{ sig: 'aGk=', keyid: 5 }] }, 'signatures[0].keyid: expected a string'],
    ];
    for (const [value, problem] of shapes) expect(envelopeShapeProblem(value)).toBe(problem);
  });
});

// `atlas receipts export --format in-toto` checked by verifiers no one here wrote: Debian's
// python3-securesystemslib (SSlibKey.verify_signature over the DSSE pre-authentication encoding),
// openssl over the same bytes, and the in-toto framework's schemas (test/fixtures/in-toto, written
// from the spec: see its README) under ajv. A tampered payload, a wrong key and a statement for
// another commit are each refused by every one of them, and by `atlas verify`.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from './helpers/in-toto-verifiers.js';
import { openssl, PYTHON, readLines, schemas, securesystemslib, statementOf, writeLines } from './helpers/in-toto-verifiers.js';
import { atlas, commitChange, createTask, git, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';

describe('in-toto attestations checked by independent verifiers', () => {
  let home: string;
  let dir: string;
  let commit: string;
  let pem: string;
  let otherPem: string;
  let envelopes: Envelope[];
  let path: string;

  beforeAll(async () => {
    ({ home } = await homeWithKey());
    dir = repo();
    commit = git(dir, 'rev-parse', 'HEAD');
    const fx = await createTask(home, dir);
    await recordRun(fx, { step: 'validate', command: 'npm test' });
    await recordRun(fx, { step: 'validate', command: 'npm run lint', exitCode: 1 });
    await recordRun(fx, { step: 'check', command: 'make check', validationTree: 'pristine', dependencies: 'repository' });
    path = join(tempDir('atlas-att-'), 'receipts.intoto.jsonl');
    const out = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id, '--out', path], { home });
    expect(out.code, out.stderr).toBe(0);
    envelopes = readLines(path);
    pem = join(tempDir('atlas-att-key-'), 'attestation.pem');
    const key = await atlas(['key', 'export', '--format', 'pem', '--for', 'attestations'], { home });
    expect(key.code, key.stderr).toBe(0);
    writeFileSync(pem, key.stdout);
    const other = await homeWithKey();
    otherPem = join(tempDir('atlas-att-key-'), 'other.pem');
    writeFileSync(otherPem, (await atlas(['key', 'export', '--format', 'pem', '--for', 'attestations'], { home: other.home })).stdout);
  });

  it('exports one envelope per step, each accepted by securesystemslib, openssl and the schemas', () => {
    expect(envelopes.map((e) => e.payloadType)).toEqual(['application/vnd.in-toto+json', 'application/vnd.in-toto+json']);
    const ssl = securesystemslib(path, pem, commit);
    expect(ssl).toEqual({
      code: 0,
      lines: [
        { line: 1, accepted: true, reason: 'ok' },
        { line: 2, accepted: true, reason: 'ok' },
      ],
    });
    for (const e of envelopes) expect(openssl(e, pem)).toBe(true);
    const { statement, testResult } = schemas();
    for (const e of envelopes) {
      const s = statementOf(e);
      expect(statement(s), JSON.stringify(statement.errors)).toBe(true);
      expect(testResult(s.predicate), JSON.stringify(testResult.errors)).toBe(true);
    }
    const [validate, check] = envelopes.map(statementOf);
    expect(validate.subject).toEqual([
      { name: 'commit', digest: { gitCommit: commit } },
      { name: 'tree', digest: { gitTree: git(dir, 'rev-parse', 'HEAD^{tree}') } },
    ]);
    expect(validate.predicate).toMatchObject({
      result: 'FAILED',
      passedTests: ['npm test'],
      failedTests: ['npm run lint'],
      warnedTests: [],
    });
    expect(check.predicate).toMatchObject({
      result: 'PASSED',
      passedTests: ['make check'],
      atlas: { step: 'check', control_paths: { state: 'not_recorded' } },
    });
    expect(check.predicate.atlas.receipts[0]).toMatchObject({
      validation_tree: 'pristine',
      dependencies: 'repository',
      execution_mode: 'local',
      executable: '/usr/bin/npm',
    });
  });

  it('the schemas themselves refuse what the spec forbids', () => {
    const { statement, testResult } = schemas();
    const s = statementOf(envelopes[0]!);
    expect(statement({ ...s, _type: 'https://in-toto.io/Statement/v0.1' })).toBe(false);
    expect(statement({ ...s, subject: [{ name: 'commit' }] })).toBe(false);
    expect(statement({ ...s, subject: [{ digest: { gitCommit: 'not-hex' } }] })).toBe(false);
    expect(testResult({ ...s.predicate, result: 'OK' })).toBe(false);
    expect(testResult({ result: 'PASSED' })).toBe(false);
  });

  it('refuses a tampered payload, everywhere', async () => {
    const tampers: ((s: Record<string, any>) => void)[] = [
      (s) => {
        s.predicate.result = 'PASSED';
        s.predicate.passedTests.push(...s.predicate.failedTests);
        s.predicate.failedTests = [];
      },
      (s) => {
        s.predicate.atlas.receipts[1].exit_code = 0;
      },
      (s) => {
        s.subject[0].digest.gitCommit = 'f'.repeat(40);
      },
      (s) => {
        s.predicate.atlas.receipts[0].execution_mode = 'sandbox';
      },
    ];
    const tampered = tampers.map((change) => {
      const s = statementOf(envelopes[0]!);
      change(s);
      return { ...envelopes[0]!, payload: Buffer.from(JSON.stringify(s)).toString('base64') };
    });
    const retyped = { ...envelopes[0]!, payloadType: 'application/json' };
    const flipped = {
      ...envelopes[0]!,
      signatures: [
        {
          ...envelopes[0]!.signatures[0]!,
          sig: Buffer.from(Buffer.from(envelopes[0]!.signatures[0]!.sig, 'base64').map((b, i) => (i === 10 ? b ^ 1 : b))).toString(
            'base64',
          ),
        },
      ],
    };
    const all = [...tampered, flipped];
    const file = writeLines(all, 'tampered.intoto.jsonl');
    const ssl = securesystemslib(file, pem, commit);
    expect(ssl.code).toBe(1);
    expect(ssl.lines.filter((l) => l.accepted)).toEqual([]);
    expect(all.filter((e) => openssl(e, pem))).toEqual([]);
    expect(openssl(retyped, pem)).toBe(false);
    expect(securesystemslib(writeLines([retyped], 'retyped.jsonl'), pem, commit).lines[0]!.accepted).toBe(false);
    const verified = await atlas(['verify', file, '--attestation-key', pem, '--json'], { home: tempDir() });
    expect(verified.code).toBe(1);
    const report = JSON.parse(verified.stdout);
    expect(report.tasks.flatMap((t: any) => t.receipts).filter((r: any) => r.valid)).toEqual([]);
    expect(report.tasks[0].receipts[0].problems[0].check).toBe('signature');
  });

  it('refuses every envelope under a wrong key, everywhere', async () => {
    const ssl = securesystemslib(path, otherPem, commit);
    expect(ssl.code).toBe(1);
    expect(ssl.lines.map((l) => l.reason)).toEqual(['no signature verifies with the key', 'no signature verifies with the key']);
    expect(envelopes.filter((e) => openssl(e, otherPem))).toEqual([]);
    const verified = await atlas(['verify', path, '--attestation-key', otherPem], { home: tempDir() });
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain('is not signed by attestation key');
  });

  it('refuses a genuine statement for another commit', async () => {
    const next = commitChange(dir, 'next.txt');
    const ssl = securesystemslib(path, pem, next);
    expect(ssl.code).toBe(1);
    expect(ssl.lines[0]!.reason).toBe(`subject is commit ${commit}, expected ${next}`);
    // openssl checks signatures only: the policy over the subject is the verifier's.
    const subjects = envelopes.map((e) => statementOf(e).subject[0].digest.gitCommit);
    expect(subjects.filter((c: string) => c === next)).toEqual([]);
    const verified = await atlas(['verify', path, '--attestation-key', pem, '--commit', next, '--no-repo-policy'], {
      home: tempDir(),
      cwd: dir,
    });
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain(`no valid receipt was made on ${next}`);
    const same = await atlas(['verify', path, '--attestation-key', pem, '--commit', commit, '--no-repo-policy'], {
      home: tempDir(),
      cwd: dir,
    });
    expect(same.code, same.stdout).toBe(0);
  });

  it('the recipes of docs/ci.md (securesystemslib) and docs/keys-and-verification.md (openssl, jq) work as written', () => {
    const docs = join(import.meta.dirname, '..', 'docs');
    const ci = readFileSync(join(docs, 'ci.md'), 'utf8');
    const block = ci.slice(ci.indexOf("<<'PY'\n") + 6, ci.indexOf('\n          PY\n'));
    const script = block
      .split('\n')
      .map((l) => l.replace(/^ {10}/, ''))
      .join('\n');
    const work = tempDir('atlas-att-docs-');
    writeFileSync(join(work, 'check.py'), script);
    const single = writeLines([envelopes[1]!], 'passed.intoto.jsonl'); // the step whose commands all passed
    const accepted = spawnSync(PYTHON, [join(work, 'check.py'), single, pem, commit], { encoding: 'utf8' });
    expect(accepted.status, accepted.stderr).toBe(0);
    const refused = spawnSync(PYTHON, [join(work, 'check.py'), single, otherPem, commit], { encoding: 'utf8' });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('UnverifiedSignatureError');
    expect(spawnSync(PYTHON, [join(work, 'check.py'), path, pem, commit], { encoding: 'utf8' }).stderr).toContain('npm run lint'); // FAILED step

    const keys = readFileSync(join(docs, 'keys-and-verification.md'), 'utf8');
    const start = keys.indexOf('```sh\n', keys.indexOf('### Checking an envelope without atlas')) + 6;
    const recipe = keys
      .slice(start, keys.indexOf('```', start))
      .split('\n')
      .filter((l) => !l.startsWith('atlas key export'))
      .join('\n');
    writeFileSync(join(work, 'attestation.pem'), readFileSync(pem));
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    writeFileSync(join(work, 'receipts.intoto.jsonl'), `${lines[1]}\n${lines[0]}\n`);
    const sh = spawnSync('bash', ['-euo', 'pipefail', '-c', recipe], {
      cwd: work,
      encoding: 'utf8',
      env: { ...process.env, COMMIT: commit },
    });
    expect(sh.status, sh.stderr).toBe(0);
    expect(sh.stdout).toContain('Verified OK');
    writeFileSync(join(work, 'attestation.pem'), readFileSync(otherPem));
    expect(
      spawnSync('bash', ['-euo', 'pipefail', '-c', recipe], { cwd: work, encoding: 'utf8', env: { ...process.env, COMMIT: commit } })
        .status,
    ).not.toBe(0);
  });

  it('installs its verifiers in CI', () => {
    const run = readFileSync(join(import.meta.dirname, '..', '.ci', 'run'), 'utf8');
    expect(run).toContain('python3-securesystemslib');
    expect(run).toContain('missing+=(jq)');
    expect(
      execFileSync(PYTHON, ['-c', 'import securesystemslib; print(securesystemslib.__version__)'], { encoding: 'utf8' }).trim(),
    ).toMatch(/^\d+\.\d+/);
  });
});

// `atlas receipts export --format in-toto`, `atlas key export --for attestations` and `atlas verify`
// of envelopes through the built CLI: the same policies as bundles, keys resolved without an xpub,
// a forged hook.json never attested, statements that disagree with themselves refused, exit codes.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Envelope } from './helpers/in-toto-verifiers.js';
import { resigned } from './helpers/in-toto-verifiers.js';
import type { Fixture } from './helpers/receipt-fixtures.js';
import { atlas, createTask, git, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';

async function exportInToto(fx: Fixture, name = 'att.intoto.jsonl'): Promise<{ path: string; envelopes: Envelope[]; stdout: string }> {
  const path = join(tempDir('atlas-att-'), name);
  const out = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id, '--out', path], { home: fx.home });
  expect(out.code, out.stderr).toBe(0);
  return {
    path,
    envelopes: readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
    stdout: out.stdout,
  };
}

async function attestationPem(home: string): Promise<string> {
  const path = join(tempDir('atlas-att-key-'), 'attestation.pem');
  const out = await atlas(['key', 'export', '--format', 'pem', '--for', 'attestations'], { home });
  expect(out.code, out.stderr).toBe(0);
  writeFileSync(path, out.stdout);
  return path;
}

function file(name: string, text: string): string {
  const path = join(tempDir('atlas-att-'), name);
  writeFileSync(path, text);
  return path;
}

describe('atlas verify of in-toto envelopes', () => {
  it('applies the same policies as to bundles, with keys from a flag, the environment or the local master key', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { command: 'npm test' });
    await recordRun(fx, { command: 'npm run lint', exitCode: 1 });
    const { path } = await exportInToto(fx);
    const pem = await attestationPem(home);
    const empty = tempDir('atlas-ci-home-'); // a CI machine: no key of its own, no xpub

    const local = await atlas(['verify', path, '--require-step', 'validate', '--require-command', 'npm test', '--commit', 'HEAD'], {
      home,
      cwd: dir,
    });
    expect(local.code, local.stdout + local.stderr).toBe(0);
    expect(local.stdout).toContain("master.key (m/44'/236'/0'/1'/0')");
    const flag = await atlas(['verify', path, '--attestation-key', pem, '--require-step', 'validate'], { home: empty });
    expect(flag.code, flag.stdout + flag.stderr).toBe(0);
    const env = await atlas(['verify', path, '--require-step', 'validate', '--json'], {
      home: empty,
      env: { ATLAS_ATTESTATION_KEY: readFileSync(pem, 'utf8') },
    });
    expect(env.code, env.stderr).toBe(0);
    expect(JSON.parse(env.stdout)).toMatchObject({
      ok: true,
      attestation_key: { source: 'ATLAS_ATTESTATION_KEY' },
      tasks: [{ kind: 'attestation', task_id: fx.ref.id }],
    });

    for (const [policy, expected] of [
      ['--require-pass', '`npm run lint` exited 1'],
      ['--require-sandbox', 'not made in the sandbox'],
      ['--require-pristine', 'not run on a pristine tree'],
    ] as const) {
      const unmet = await atlas(['verify', path, '--attestation-key', pem, policy], { home: empty });
      expect(unmet.code, policy).toBe(1);
      expect(unmet.stdout).toContain(expected);
    }
    const missing = await atlas(['verify', path, '--attestation-key', pem, '--require-command', 'make all'], { home: empty });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain('no valid receipt of `make all`');

    // Receipts and their attestation side by side: each checked with its own key.
    const bundle = join(tempDir('atlas-att-'), 'receipts.json');
    expect((await atlas(['receipts', 'export', '--task', fx.ref.id, '--out', bundle], { home })).code).toBe(0);
    const both = await atlas(['verify', bundle, path, '--xpub', xpub, '--attestation-key', pem, '--json'], { home: empty });
    expect(both.code, both.stdout).toBe(0);
    expect(JSON.parse(both.stdout).summary).toMatchObject({ tasks: 2, receipts: 4, valid: 4 });
    const bundleWithoutXpub = await atlas(['verify', bundle, path, '--attestation-key', pem], { home: empty });
    expect(bundleWithoutXpub.code).toBe(3);
    expect(bundleWithoutXpub.stderr).toContain('no public key to verify with');

    // One envelope alone, as a plain JSON file, reads the same.
    const { envelopes } = await exportInToto(fx);
    const single = await atlas(['verify', file('one.json', JSON.stringify(envelopes[0])), '--attestation-key', pem], { home: empty });
    expect(single.code, single.stdout).toBe(0);
  });

  it('accepts envelopes committed after the commit they prove, as bundles are', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { command: 'npm test' });
    const validated = git(dir, 'rev-parse', 'HEAD');
    const out = await atlas(['receipts', 'export', '--format', 'in-toto', '--out', '.atlas/receipts.intoto.jsonl'], { home, cwd: dir });
    expect(out.code, out.stderr).toBe(0);
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'attestations');
    const pem = await attestationPem(home);
    const ok = await atlas(
      ['verify', '.atlas/receipts.intoto.jsonl', '--attestation-key', pem, '--require-step', 'validate', '--commit', 'HEAD'],
      { home: tempDir(), cwd: dir },
    );
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`made on ${validated.slice(0, 12)}, whose tree differs only in .atlas/receipts.intoto.jsonl`);
  });

  it('applies the repository policy: the validation commands committed on the verified commit', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    mkdirSync(join(dir, '.atlas'));
    writeFileSync(join(dir, '.atlas', 'config.yaml'), 'validation:\n  commands: ["npm test", "make lint"]\n');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'policy');
    const fx = await createTask(home, dir);
    await recordRun(fx, { command: 'npm test' });
    const { path } = await exportInToto(fx);
    const pem = await attestationPem(home);
    const unmet = await atlas(['verify', path, '--attestation-key', pem, '--commit', 'HEAD'], { home: tempDir(), cwd: dir });
    expect(unmet.code).toBe(1);
    expect(unmet.stdout).toContain('"make lint" (.atlas/config.yaml at');
    const off = await atlas(['verify', path, '--attestation-key', pem, '--commit', 'HEAD', '--no-repo-policy'], {
      home: tempDir(),
      cwd: dir,
    });
    expect(off.code, off.stdout).toBe(0);
  });

  it('never attests a receipt that does not verify: a forged hook.json exports nothing', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test', exitCode: 2 });
    const hookPath = join(fx.ref.dir, 'hook.json');
    const hook = JSON.parse(readFileSync(hookPath, 'utf8'));
    hook.receipts[0].exit_code = 0; // what an agent with write access to the task folder would do
    writeFileSync(hookPath, JSON.stringify(hook, null, 2));
    const out = join(tempDir('atlas-att-'), 'forged.intoto.jsonl');
    const result = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id, '--out', out], { home });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`receipt ${hook.receipts[0].receipt_id} of ${fx.ref.id} does not verify`);
    expect(result.stderr).toContain('nothing was attested');
    expect(() => readFileSync(out)).toThrow();
  });

  it('attests only receipts made on a clean commit, and says which it left out', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    writeFileSync(join(dir, 'README.md'), 'uncommitted\n');
    await recordRun(fx, { command: 'npm test' });
    const none = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id], { home });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('nothing to attest');
    git(dir, 'commit', '-qam', 'commit it');
    await recordRun(fx, { command: 'npm test' });
    const stdout = await atlas(['receipts', 'export', '--format', 'in-toto', '--task', fx.ref.id], { home });
    expect(stdout.code, stdout.stderr).toBe(0);
    expect(stdout.stdout.trim().split('\n')).toHaveLength(1);
    expect(stdout.stderr).toContain('not attested: 1 receipt not made on a clean commit');
    expect(stdout.stderr).toContain('made with uncommitted changes');
    const { stdout: text } = await exportInToto(fx);
    expect(text).toContain('wrote');
    expect(text).toContain('1 attestation of 1 receipt');
  });

  it('refuses a signed statement that disagrees with itself', async () => {
    const { home } = await homeWithKey();
    const dir = repo();
    const fx = await createTask(home, dir);
    await recordRun(fx, { step: 'validate', command: 'npm test', exitCode: 1 });
    await recordRun(fx, { step: 'build', command: 'make' });
    const { envelopes } = await exportInToto(fx);
    const pem = await attestationPem(home);
    const other = 'a'.repeat(40);
    const lies: [string, (s: any) => void, string][] = [
      [
        'result',
        (s) => {
          s.predicate.result = 'PASSED';
        },
        'predicate.result does not match the receipts',
      ],
      [
        'subject',
        (s) => {
          s.subject[0].digest.gitCommit = other;
        },
        `the subject names commit ${other}`,
      ],
      [
        'tree',
        (s) => {
          s.subject[1].digest.gitTree = other;
        },
        'the subject names tree',
      ],
      [
        'no tree',
        (s) => {
          s.subject = s.subject.slice(0, 1);
        },
        'the subject names tree none',
      ],
      [
        'commit',
        (s) => {
          s.predicate.atlas.commit = other;
        },
        'was not made on',
      ],
      [
        'step',
        (s) => {
          s.predicate.atlas.step = 'build';
        },
        'the statement of',
      ],
      [
        'type',
        (s) => {
          s._type = 'https://in-toto.io/Statement/v0.1';
        },
        '_type is',
      ],
      [
        'predicate',
        (s) => {
          s.predicateType = 'https://slsa.dev/provenance/v1';
        },
        'predicateType is',
      ],
      [
        'version',
        (s) => {
          s.predicate.atlas.version = 2;
        },
        'atlas.version is 2',
      ],
      [
        'bad commit',
        (s) => {
          s.predicate.atlas.commit = 'HEAD';
        },
        'atlas.commit is not a full commit id',
      ],
      [
        'bad tree',
        (s) => {
          s.predicate.atlas.tree = 'x';
        },
        'atlas.tree is not a full tree id',
      ],
    ];
    for (const [name, change, message] of lies) {
      const path = file(`${name}.jsonl`, `${JSON.stringify(resigned(home, envelopes[0]!, change))}\n`);
      const result = await atlas(['verify', path, '--attestation-key', pem], { home: tempDir() });
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toContain(message);
    }
  });

  it('says what is wrong with input that is not an atlas attestation (exit 2) and with keys (exit 3)', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test' });
    const { path, envelopes } = await exportInToto(fx);
    const pem = await attestationPem(home);
    const e = envelopes[0]!;
    const payload = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
    const inputs: [string, string, string][] = [
      ['garbage line', `${JSON.stringify(e)}\nnot json\n`, 'line 2 is not an envelope of an atlas in-toto statement: not JSON'],
      ['payload type', JSON.stringify({ ...e, payloadType: 'application/json' }), 'payloadType is "application/json"'],
      ['no signatures', JSON.stringify({ ...e, signatures: [] }), 'signatures: expected a non-empty list'],
      ['bad base64', JSON.stringify({ ...e, payload: '***' }), 'payload: expected base64'],
      ['bad sig', JSON.stringify({ ...e, signatures: [{ sig: 5 }] }), 'signatures[0].sig: expected base64'],
      ['bad keyid', JSON.stringify({ ...e, signatures: [{ sig: 'AA==', keyid: 1 }] }), 'signatures[0].keyid: expected a string'],
      ['sig not object', JSON.stringify({ ...e, signatures: ['x'] }), 'signatures[0]: expected an object'],
      ['payload not json', JSON.stringify({ ...e, payload: Buffer.from('nope').toString('base64') }), 'the payload is not JSON'],
      [
        'foreign statement',
        JSON.stringify({ ...e, payload: payload({ _type: 'https://in-toto.io/Statement/v1', predicate: {} }) }),
        'no predicate.atlas',
      ],
      ['no task', JSON.stringify({ ...e, payload: payload({ predicate: { atlas: { task: {} } } }) }), 'predicate.atlas.task.id'],
      [
        'no step',
        JSON.stringify({ ...e, payload: payload({ predicate: { atlas: { task: { id: fx.ref.id } } } }) }),
        'predicate.atlas.step',
      ],
      [
        'no receipts',
        JSON.stringify({ ...e, payload: payload({ predicate: { atlas: { task: { id: fx.ref.id }, step: 's', receipts: [] } } }) }),
        'predicate.atlas.receipts: expected a non-empty list',
      ],
      [
        'bad receipt',
        JSON.stringify({ ...e, payload: payload({ predicate: { atlas: { task: { id: fx.ref.id }, step: 's', receipts: [{}] } } }) }),
        'predicate.atlas.receipts[0]: receipt_id',
      ],
      ['array line', '[1]\n[2]\n', 'is not valid JSON'],
    ];
    for (const [name, text, message] of inputs) {
      const result = await atlas(['verify', file(`${name.replace(/ /g, '-')}.jsonl`, text), '--attestation-key', pem], { home });
      expect(result.code, `${name}: ${result.stderr}`).toBe(2);
      expect(result.stderr, name).toContain(message);
    }

    const empty = tempDir('atlas-ci-home-');
    const keyProblems: [string[], Record<string, string>, string][] = [
      [[], {}, 'no attestation key to verify the envelopes with'],
      [['--attestation-key', join(empty, 'missing.pem')], {}, 'cannot read the attestation key file'],
      [
        ['--attestation-key', file('k1.pem', (await atlas(['key', 'export', '--pem'], { home })).stdout)],
        {},
        'is not a P-256 key (ec secp256k1)',
      ],
      [['--attestation-key', file('junk.pem', 'hello')], {}, 'is not a PEM public key'],
      [[], { ATLAS_ATTESTATION_KEY: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }, 'holds a private key'],
    ];
    for (const [args, env, message] of keyProblems) {
      const result = await atlas(['verify', path, ...args], { home: empty, env });
      expect(result.code, message).toBe(3);
      expect(result.stderr).toContain(message);
    }
  });

  it('checks the output files an envelope hashes, with --artifacts', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test', stdout: 'all good\n' });
    const { path } = await exportInToto(fx);
    const ok = await atlas(['verify', path, '--artifacts', fx.ref.dir, '--json'], { home });
    expect(ok.code, ok.stdout).toBe(0);
    expect(JSON.parse(ok.stdout).tasks[0].receipts[0].artifacts).toEqual({ stdout: 'verified', stderr: 'verified' });
    const hook = JSON.parse(readFileSync(join(fx.ref.dir, 'hook.json'), 'utf8'));
    writeFileSync(join(fx.ref.dir, hook.receipts[0].stdout_artifact), 'all bad\n');
    const changed = await atlas(['verify', path, '--artifacts', fx.ref.dir], { home });
    expect(changed.code).toBe(1);
    expect(changed.stdout).toContain('stdout changed');
  });
});

describe('atlas key export --for attestations', () => {
  it('prints the P-256 public key as PEM, and needs the master key', async () => {
    const { home } = await homeWithKey();
    const text = await atlas(['key', 'export', '--for', 'attestations'], { home });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----\n$/);
    const json = await atlas(['key', 'export', '--for', 'attestations', '--json'], { home });
    expect(JSON.parse(json.stdout)).toMatchObject({ for: 'attestations', curve: 'P-256', path: "m/44'/236'/0'/1'/0'", pem: text.stdout });
    const path = await atlas(['key', 'export', '--for', 'attestations', '--path', "m/44'/236'/0'"], { home });
    expect(path.code).toBe(2);
    // The receipt keys are unchanged: --format pem is --pem.
    const receiptPem = await atlas(['key', 'export', '--format', 'pem', '--path', "m/44'/236'/0'/0/0"], { home });
    const legacy = await atlas(['key', 'export', '--pem', '--path', "m/44'/236'/0'/0/0"], { home });
    expect(receiptPem.stdout).toBe(legacy.stdout);

    const xpubOnly = tempDir('atlas-ci-home-');
    mkdirSync(join(xpubOnly, 'keys'), { mode: 0o700 });
    copyFileSync(join(home, 'keys', 'account.xpub'), join(xpubOnly, 'keys', 'account.xpub'));
    const without = await atlas(['key', 'export', '--for', 'attestations'], { home: xpubOnly });
    expect(without.code).toBe(3);
    expect(without.stderr).toContain('the attestation key needs the master key');
  });
});

// `atlas verify` end to end through the built CLI: keys, exit codes on bad input, JUnit and JSON
// output, worker threads, and openssl verifying a receipt with the PEM from `atlas key export --path`.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { masterFromSeed } from '../src/crypto/hd.js';
import { readMasterSeed } from '../src/crypto/key-files.js';
import { DEFAULT_KEY_DERIVATION } from '../src/domain/receipt.js';
import { assertWellFormedXml, atlas, createTask, homeWithKey, recordRun, repo, tempDir } from './helpers/receipt-fixtures.js';
import { exported, rewrite } from './helpers/verify-cli-fixtures.js';

describe('atlas receipts export + atlas verify', () => {
  it('uses the key from --xpub, --xpub-file or ATLAS_XPUB: exit 3 when it is malformed, 1 when it is another key', async () => {
    const { home, xpub } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx);
    const { path } = await exported(home, fx.ref.id);
    const ci = tempDir();

    expect((await atlas(['verify', path], { home: ci })).code).toBe(3); // no key at all
    expect((await atlas(['verify', path, '--xpub', 'xpub-not-a-key'], { home: ci })).code).toBe(3);
    expect((await atlas(['verify', path], { home: ci, env: { ATLAS_XPUB: 'garbage' } })).code).toBe(3);
    const priv = await atlas(['verify', path, '--xpub', masterFromSeed(readMasterSeed(home)).privateExtendedKey], { home: ci });
    expect(priv.code).toBe(3);
    expect(priv.stderr).toContain('private');
    expect((await atlas(['verify', path, '--xpub-file', join(ci, 'missing.xpub')], { home: ci })).code).toBe(3);

    const keyFile = join(ci, 'ci.xpub');
    writeFileSync(keyFile, `${xpub}\n`);
    expect((await atlas(['verify', path, '--xpub-file', keyFile], { home: ci })).code).toBe(0);
    expect((await atlas(['verify', path], { home: ci, env: { ATLAS_XPUB: xpub } })).code).toBe(0);

    const other = await homeWithKey();
    const wrong = await atlas(['verify', path, '--xpub', other.xpub], { home: ci });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain('signature does not match');
    expect(wrong.stdout).toContain(`exported with key`);
  });

  it('exits 2 on unreadable or malformed input', async () => {
    const { home, xpub } = await homeWithKey();
    const dir = tempDir();
    writeFileSync(join(dir, 'broken.json'), '{ not json');
    writeFileSync(join(dir, 'other.json'), '{"hello": 1}');
    writeFileSync(
      join(dir, 'bundle.json'),
      JSON.stringify({
        format: 'atlas-receipt-bundle',
        version: 1,
        exported_at: '2026-01-17T14:35:00Z',
        xpub,
        xpub_fingerprint: 'x',
        key_derivation: DEFAULT_KEY_DERIVATION,
      }),
    );
    writeFileSync(
      join(dir, 'receipt.json'),
      JSON.stringify({
        format: 'atlas-receipt-bundle',
        version: 1,
        exported_at: '2026-01-17T14:35:00Z',
        xpub,
        xpub_fingerprint: 'x',
        key_derivation: DEFAULT_KEY_DERIVATION,
        tasks: [{ task_id: 'task-20260117-143022', task_index: 0, workspace_id: 'w', receipts: [{ receipt_id: 'rcpt-00000001' }] }],
      }),
    );
    for (const input of ['broken.json', 'other.json', 'bundle.json', 'receipt.json', 'nothing-here.json', 'task-20990101-000000']) {
      const result = await atlas(['verify', input, '--xpub', xpub], { home, cwd: dir });
      expect(result.code, `${input}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/^atlas: /);
    }
    const noTask = await atlas(['verify', '--xpub', xpub], { home, cwd: dir });
    expect(noTask.code).toBe(2);
    expect((await atlas(['verify', join(dir, 'bundle.json'), '--xpub', xpub, '--commit', 'not-a-ref'], { home, cwd: repo() })).code).toBe(
      2,
    );
  });

  it('writes a JUnit report with a test case per receipt and per policy, and --json', async () => {
    const { home, xpub } = await homeWithKey();
    const fx = await createTask(home, repo());
    await recordRun(fx, { command: 'npm test -- --grep "<a & b>"' });
    await recordRun(fx, { command: 'npm run lint', exitCode: 1 });
    const { path } = await exported(home, fx.ref.id);
    const bad = rewrite(path, (x) => {
      x.tasks[0]!.receipts[1]!.exit_code = 0;
    });
    const junit = join(tempDir(), 'report.xml');
    const result = await atlas(
      ['verify', bad, '--xpub', xpub, '--require-step', 'validate', '--require-pass', '--junit', junit, '--json'],
      { home },
    );
    expect(result.code).toBe(1);
    const xml = readFileSync(junit, 'utf8');
    assertWellFormedXml(xml);
    expect(xml.match(/<testcase /g)).toHaveLength(4);
    expect(xml.match(/<failure /g)).toHaveLength(1);
    expect(xml).toContain('&lt;a &amp; b&gt;');
    expect(xml).toContain('name="--require-step validate"');

    const json = JSON.parse(result.stdout);
    expect(json.ok).toBe(false);
    expect(json.summary).toMatchObject({ receipts: 2, valid: 1, invalid: 1, policies: 2, unmet: 0 });
    expect(json.tasks[0].receipts[1]).toMatchObject({ valid: false, problems: [expect.objectContaining({ check: 'signature' })] });
  });

  it('gives the same verdicts when large inputs are split across worker threads', async () => {
    const { home, xpub } = await homeWithKey();
    const ids: string[] = [];
    for (let t = 0; t < 3; t++) {
      const fx = await createTask(home, repo());
      for (let i = 0; i < 3; i++) await recordRun(fx, { command: `check ${t}.${i}`, exitCode: i === 2 ? 1 : 0 });
      ids.push(fx.ref.id);
    }
    const { path } = await exported(home, ...ids);
    const bad = rewrite(path, (x) => {
      x.tasks[1]!.receipts[2]!.exit_code = 0;
      x.tasks[2]!.receipts.reverse();
    });
    const args = ['verify', bad, '--xpub', xpub, '--require-pass', '--json'];
    const here = await atlas(args, { home, env: { ATLAS_VERIFY_WORKERS: '0' } });
    const split = await atlas(args, { home, env: { ATLAS_VERIFY_WORKERS: '3' } });
    expect(split.code).toBe(1);
    expect(split.code).toBe(here.code);
    expect(JSON.parse(split.stdout)).toEqual(JSON.parse(here.stdout));
    const summary = JSON.parse(split.stdout).summary;
    expect(summary).toMatchObject({ receipts: 9, valid: 6, invalid: 3 });
  });

  it('produces signatures openssl verifies with the PEM from `atlas key export --path`', async () => {
    const { home } = await homeWithKey();
    const fx = await createTask(home, repo());
    const receipt = await recordRun(fx, { command: 'npm test | grep -v "skip"' });
    const work = tempDir('atlas-openssl-');
    const pem = await atlas(['key', 'export', '--path', receipt.key_path, '--pem'], { home });
    expect(pem.code).toBe(0);
    writeFileSync(join(work, 'pub.pem'), pem.stdout);
    const message = await atlas(['receipts', 'message', receipt.receipt_id, '--task', fx.ref.id, '--signature', join(work, 'sig.der')], {
      home,
    });
    expect(message.code).toBe(0);
    expect(message.stdout.startsWith(`${receipt.receipt_id}|npm test | grep -v "skip"|0|`)).toBe(true);
    writeFileSync(join(work, 'msg'), message.stdout);
    expect(readFileSync(join(work, 'sig.der')).toString('hex')).toBe(receipt.signature);

    const verified = execFileSync('openssl', ['dgst', '-sha256', '-verify', 'pub.pem', '-signature', 'sig.der', 'msg'], {
      cwd: work,
      encoding: 'utf8',
    });
    expect(verified.trim()).toBe('Verified OK');

    writeFileSync(join(work, 'msg'), message.stdout.replace('|0|', '|1|'));
    expect(() =>
      execFileSync('openssl', ['dgst', '-sha256', '-verify', 'pub.pem', '-signature', 'sig.der', 'msg'], { cwd: work, stdio: 'pipe' }),
    ).toThrow();
  });
});

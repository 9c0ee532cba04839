// The master key on disk: created once (0600 in a 0700 folder), idempotent and race-safe,
// refused with the exact chmod fix when others can read it, a clear `atlas init` error when
// missing, and never printed.
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMasterSeed } from '../src/crypto/key-files.js';
import { ensureMasterKey, FileKeyManager, masterKeySummary } from '../src/crypto/key-manager.js';
import { DEFAULT_KEY_DERIVATION } from '../src/domain/receipt.js';
import { atlas, CONFIG, homeWithKey, tempDir } from './helpers/receipt-fixtures.js';

function caught(fn: () => unknown): { message: string; hint?: string; exitCode?: number } {
  try {
    fn();
  } catch (error) {
    return error as { message: string; hint?: string; exitCode?: number };
  }
  throw new Error('expected an error');
}

describe('master key files', () => {
  it('creates master.key 0600 in a 0700 keys folder, and account.xpub beside it', async () => {
    const home = tempDir();
    const info = await ensureMasterKey(home, CONFIG);
    expect(info.created).toBe(true);
    expect(statSync(join(home, 'keys')).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, 'keys', 'master.key')).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(join(home, 'keys', 'master.key'), 'utf8'));
    expect(file).toMatchObject({ format: 'atlas-master-key', version: 1 });
    expect(file.seed).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(home, 'keys', 'account.xpub'), 'utf8')).toBe(`${info.xpub}\n`);
    expect(info.xpub).toMatch(/^xpub/);
    expect(info.accountPath).toBe("m/44'/236'/0'");
    expect(info.fingerprint).toMatch(/^[0-9a-f]{8}$/);
    const summary = masterKeySummary(info).join('\n');
    expect(summary).toContain(info.fingerprint);
    expect(summary).toContain('atlas key export');
    expect(summary).not.toContain(file.seed);
  });

  it('is idempotent and never replaces an existing key, even when raced', async () => {
    const home = tempDir();
    const results = await Promise.all([ensureMasterKey(home, CONFIG), ensureMasterKey(home, CONFIG), ensureMasterKey(home, CONFIG)]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.xpub)).size).toBe(1);
    const again = await ensureMasterKey(home, CONFIG);
    expect(again.created).toBe(false);
    expect(again.accountXpubWritten).toBe(false);
    expect(again.xpub).toBe(results[0]!.xpub);
  });

  it('follows hooks.key_derivation for the account xpub', async () => {
    const home = tempDir();
    const a = await ensureMasterKey(home, CONFIG);
    const b = await ensureMasterKey(home, { hooks: { key_derivation: { ...DEFAULT_KEY_DERIVATION, account: 1 } } });
    expect(b.accountPath).toBe("m/44'/236'/1'");
    expect(b.xpub).not.toBe(a.xpub);
    expect(b.previousXpub).toBe(a.xpub);
  });

  it('refuses a key file readable by others, naming the chmod fix', async () => {
    const { home } = await homeWithKey();
    const path = join(home, 'keys', 'master.key');
    chmodSync(path, 0o644);
    const error = caught(() => readMasterSeed(home));
    expect(error.exitCode).toBe(3);
    expect(error.message).toContain('mode 0644');
    expect(error.hint).toContain(`chmod 600 ${path}`);
    chmodSync(path, 0o640);
    expect(caught(() => readMasterSeed(home)).message).toContain('its group');
    chmodSync(path, 0o600);
    expect(readMasterSeed(home)).toHaveLength(32);
  });

  it('refuses a keys folder open to others', async () => {
    const { home } = await homeWithKey();
    chmodSync(join(home, 'keys'), 0o755);
    const error = caught(() => readMasterSeed(home));
    expect(error.exitCode).toBe(3);
    expect(error.hint).toContain(`chmod 700 ${join(home, 'keys')}`);
    await expect(ensureMasterKey(home, CONFIG)).rejects.toMatchObject({ exitCode: 3 });
  });

  it('says to run `atlas init` when there is no key to sign with', async () => {
    const home = tempDir();
    const manager = new FileKeyManager(home, DEFAULT_KEY_DERIVATION);
    expect(manager.exists()).toBe(false);
    await expect(manager.newSigner()).rejects.toMatchObject({ exitCode: 3, hint: expect.stringContaining('atlas init') });
  });

  it('reports a corrupt key file without quoting its content', async () => {
    const { home } = await homeWithKey();
    const path = join(home, 'keys', 'master.key');
    writeFileSync(path, '{"format":"atlas-master-key","version":1,"seed":"SECRETSECRET"}');
    const error = caught(() => readMasterSeed(home));
    expect(error.exitCode).toBe(3);
    expect(error.message).not.toContain('SECRETSECRET');
    writeFileSync(path, 'SECRETSECRET not json');
    expect(caught(() => readMasterSeed(home)).message).not.toContain('SECRETSECRET');
  });
});

describe('atlas key show / export', () => {
  it('shows fingerprints, derivation and permissions but never the seed', async () => {
    const { home, xpub, fingerprint } = await homeWithKey();
    const seed = JSON.parse(readFileSync(join(home, 'keys', 'master.key'), 'utf8')).seed as string;
    const shown = await atlas(['key', 'show'], { home });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(xpub);
    expect(shown.stdout).toContain(fingerprint);
    expect(shown.stdout).toContain("m/44'/236'/0'/{task_index}/{receipt_index}");
    expect(shown.stdout).toContain('ok (owner only)');
    const json = await atlas(['key', 'show', '--json'], { home });
    for (const out of [shown.stdout, json.stdout, shown.stderr]) {
      expect(out).not.toContain(seed);
      expect(out).not.toMatch(/xprv/);
    }
    expect(JSON.parse(json.stdout).account.xpub_fingerprint).toBe(fingerprint);

    chmodSync(join(home, 'keys', 'master.key'), 0o644);
    const unsafe = await atlas(['key', 'show'], { home });
    expect(unsafe.code).toBe(3);
    expect(unsafe.stdout).toContain(`chmod 600 ${join(home, 'keys', 'master.key')}`);
  });

  it('exports the xpub, and public keys at paths (master key or xpub)', async () => {
    const { home, xpub } = await homeWithKey();
    const exported = await atlas(['key', 'export'], { home });
    expect(exported).toMatchObject({ code: 0, stdout: `${xpub}\n` });
    const pem = await atlas(['key', 'export', '--path', "m/44'/236'/0'/3/1", '--pem'], { home });
    expect(pem.code).toBe(0);
    expect(pem.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n$/);
    const hardened = await atlas(['key', 'export', '--path', "m/44'/0'", '--pem'], { home });
    expect(hardened.code).toBe(0);

    // A machine with only the xpub (like CI) derives non-hardened paths below the account.
    const ci = tempDir();
    await ensureMasterKey(ci, CONFIG);
    writeFileSync(join(ci, 'keys', 'account.xpub'), `${xpub}\n`);
    const { rmSync } = await import('node:fs');
    rmSync(join(ci, 'keys', 'master.key'));
    const fromXpub = await atlas(['key', 'export', '--path', "m/44'/236'/0'/3/1", '--pem'], { home: ci });
    expect(fromXpub).toMatchObject({ code: 0, stdout: pem.stdout });
    const needsMaster = await atlas(['key', 'export', '--path', "m/44'/236'/0'/3'/1"], { home: ci });
    expect(needsMaster.code).toBe(3);
    expect(needsMaster.stderr).toContain('needs the master key');
    const bad = await atlas(['key', 'export', '--path', 'x/1'], { home: ci });
    expect(bad.code).toBe(2);
    expect(existsSync(join(ci, 'keys', 'master.key'))).toBe(false);
  });
});

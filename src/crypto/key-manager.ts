// FileKeyManager (seed 003 KeyManager): the master key in $ATLAS_HOME/keys/master.key and the
// account xpub beside it. ensureMasterKey() is what `atlas init` and the first `atlas start` call.
// The crypto libraries are imported inside the functions that need them, so importing this module
// stays cheap.
import { randomBytes } from 'node:crypto';
import type { KeyDerivation } from '../domain/receipt.js';
import { accountPath } from '../domain/receipt.js';
import { withLock } from '../store/lock.js';
import {
  ensureKeysDir,
  keyFilePaths,
  MASTER_SEED_BYTES,
  masterKeyExists,
  readAccountXpubFile,
  readMasterSeed,
  writeAccountXpubFile,
  writeMasterKeyFile,
} from './key-files.js';
import type { KeyManager, ReceiptSigner } from './signer.js';

export interface MasterKeyInfo {
  /** True when this call generated the master key. */
  created: boolean;
  /** BIP32 fingerprint of the master key (8 hex). */
  fingerprint: string;
  accountPath: string;
  /** The account xpub: what CI verifies with (public). */
  xpub: string;
  xpubFingerprint: string;
  derivation: KeyDerivation;
  masterKeyFile: string;
  accountXpubFile: string;
  /** account.xpub was (re)written: it was missing or held another xpub (derivation changed). */
  accountXpubWritten: boolean;
  /** What account.xpub held before, when this call replaced it. */
  previousXpub?: string;
}

interface DerivationSource {
  hooks: { key_derivation: KeyDerivation };
}

export class FileKeyManager implements KeyManager {
  private seed: Uint8Array | undefined;

  constructor(
    private readonly home: string,
    private readonly derivation: KeyDerivation,
  ) {}

  exists(): boolean {
    return masterKeyExists(this.home);
  }

  async load(): Promise<void> {
    this.seed = readMasterSeed(this.home);
  }

  async newSigner(): Promise<ReceiptSigner> {
    if (!this.seed) await this.load();
    const [{ masterFromSeed }, { HDReceiptSigner }] = await Promise.all([import('./hd.js'), import('./hd-signer.js')]);
    return new HDReceiptSigner(masterFromSeed(this.seed!), this.derivation);
  }
}

/**
 * Creates the master key when there is none (32 random bytes of seed; keys/ 0700, master.key
 * 0600), keeps account.xpub in step with it, and describes the key. Idempotent and safe to race:
 * creation happens under a lock, and an existing key is never replaced.
 */
export async function ensureMasterKey(home: string, config: DerivationSource, now: Date = new Date()): Promise<MasterKeyInfo> {
  const derivation = config.hooks.key_derivation;
  const paths = keyFilePaths(home);
  ensureKeysDir(home);
  return withLock(paths.masterKey, async () => {
    let created = false;
    if (!masterKeyExists(home)) {
      writeMasterKeyFile(home, randomBytes(MASTER_SEED_BYTES), now);
      created = true;
    }
    const { masterFromSeed, deriveAccount, fingerprintHex } = await import('./hd.js');
    const master = masterFromSeed(readMasterSeed(home));
    const account = deriveAccount(master, derivation);
    const xpub = account.publicExtendedKey;
    const previous = readAccountXpubFile(home);
    const accountXpubWritten = previous !== xpub;
    if (accountXpubWritten) writeAccountXpubFile(home, xpub);
    const info: MasterKeyInfo = {
      created,
      fingerprint: fingerprintHex(master),
      accountPath: accountPath(derivation),
      xpub,
      xpubFingerprint: fingerprintHex(account),
      derivation,
      masterKeyFile: paths.masterKey,
      accountXpubFile: paths.accountXpub,
      accountXpubWritten,
    };
    if (accountXpubWritten && previous !== undefined) info.previousXpub = previous;
    return info;
  });
}

/** What `atlas init` / the first `atlas start` tell the user about the key (never the secret). */
export function masterKeySummary(info: MasterKeyInfo): string[] {
  const lines: string[] = [];
  if (info.created) {
    lines.push(`created the signing key ${info.masterKeyFile} (fingerprint ${info.fingerprint}); back it up, never share it`);
  }
  if (info.accountXpubWritten && info.previousXpub !== undefined) {
    lines.push(`account.xpub changed (derivation ${info.accountPath}): give CI the new one (\`atlas key export\`)`);
  }
  if (info.created || info.accountXpubWritten) {
    lines.push(
      `account xpub ${info.xpubFingerprint} (${info.accountPath}) in ${info.accountXpubFile}: \`atlas key export\` prints it for CI`,
    );
  }
  return lines;
}

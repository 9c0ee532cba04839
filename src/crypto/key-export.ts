// Public keys for other tools: the account xpub, or the key at a path (from the master key when
// this machine has it, else from the account xpub for non-hardened paths below the account).
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation } from '../domain/receipt.js';
import { accountPath, formatKeyPath, parseKeyPath, stepsBelowAccount } from '../domain/receipt.js';
import { keyFilePaths, masterKeyExists, readAccountXpubFile, readMasterSeed } from './key-files.js';

export interface ExportedKey {
  path: string;
  /** Compressed SEC1 public key, hex. */
  public_key: string;
  pem: string;
  /** For the account path: its extended public key. */
  xpub?: string;
  fingerprint: string;
  /** Which key it was derived from. */
  derived_from: 'master key' | 'account xpub';
}

export async function exportPublicKey(home: string, derivation: KeyDerivation, path?: string): Promise<ExportedKey> {
  const hd = await import('./hd.js');
  const account = accountPath(derivation);
  const steps = parseKeyPath(path ?? account);
  if (!steps) {
    throw new AtlasError(`--path ${path}: not a key path`, {
      exitCode: EXIT.input,
      hint: `write it like ${account}/0/0 (' marks hardened levels)`,
    });
  }
  const canonical = formatKeyPath(steps);
  const isAccount = canonical === account;
  const describe = (node: InstanceType<typeof hd.HDKey>, from: ExportedKey['derived_from']): ExportedKey => {
    const key: ExportedKey = {
      path: canonical,
      public_key: Buffer.from(node.publicKey!).toString('hex'),
      pem: hd.publicKeyPem(node.publicKey!),
      fingerprint: hd.fingerprintHex(node),
      derived_from: from,
    };
    if (isAccount) key.xpub = node.publicExtendedKey;
    return key;
  };

  if (masterKeyExists(home)) {
    const master = hd.masterFromSeed(readMasterSeed(home));
    return describe(hd.derivePath(master, steps), 'master key');
  }
  const xpub = readAccountXpubFile(home);
  if (xpub === undefined) {
    throw new AtlasError(`no key in ${keyFilePaths(home).dir}`, { exitCode: EXIT.key, hint: 'run `atlas init` to create the master key' });
  }
  const below = stepsBelowAccount(steps, derivation);
  if (!below || below.some((s) => s.hardened)) {
    throw new AtlasError(`${canonical} needs the master key, which is not on this machine`, {
      exitCode: EXIT.key,
      hint: `the account xpub only derives non-hardened paths below ${account} (like ${account}/5/0); run this where ${keyFilePaths(home).masterKey} exists`,
    });
  }
  const node = hd.parseAccountXpub(xpub, keyFilePaths(home).accountXpub);
  return describe(hd.derivePath(node, below), 'account xpub');
}

export interface ExportedAttestationKey {
  for: 'attestations';
  /** SLIP-0010 path on the nist256p1 tree. */
  path: string;
  curve: 'P-256';
  /** Hex SHA-256 of the DER SubjectPublicKeyInfo: the keyid in the envelopes. */
  keyid: string;
  pem: string;
}

/** The attestation key's public half. Its path is hardened, so only the master key derives it. */
export async function exportAttestationKey(home: string, derivation: KeyDerivation): Promise<ExportedAttestationKey> {
  if (!masterKeyExists(home)) {
    throw new AtlasError(`the attestation key needs the master key, which is not on this machine (${keyFilePaths(home).masterKey})`, {
      exitCode: EXIT.key,
      hint: 'run this where the receipts were signed (or `atlas init` to create a key)',
    });
  }
  const { deriveAttestationKey } = await import('./attestation-key.js');
  const key = deriveAttestationKey(readMasterSeed(home), derivation);
  return { for: 'attestations', path: key.path, curve: 'P-256', keyid: key.keyid, pem: key.pem };
}

// Which public keys `atlas verify` trusts. Receipts: --xpub, then --xpub-file, then $ATLAS_XPUB, then
// the local $ATLAS_HOME/keys/account.xpub. Attestations: --attestation-key, then
// $ATLAS_ATTESTATION_KEY, then the key derived from the local master key. Never a key an input
// carries: anyone can write a bundle or an envelope.
import { readFileSync } from 'node:fs';
import { keyFilePaths, masterKeyExists, readAccountXpubFile, readMasterSeed } from '../crypto/key-files.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { KeyDerivation } from '../domain/receipt.js';
import type { TrustedAttestationKey } from './attestation-check.js';

export interface XpubText {
  text: string;
  /** Where it came from, for messages: "--xpub", "--xpub-file keys/ci.xpub", "ATLAS_XPUB", a path. */
  source: string;
}

export function resolveXpubText(
  options: { xpub?: string; xpubFile?: string },
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): XpubText {
  if (options.xpub !== undefined) return { text: options.xpub, source: '--xpub' };
  if (options.xpubFile !== undefined) {
    try {
      return { text: readFileSync(options.xpubFile, 'utf8'), source: `--xpub-file ${options.xpubFile}` };
    } catch (error) {
      throw new AtlasError(
        `cannot read the xpub file ${options.xpubFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        {
          exitCode: EXIT.key,
          hint: 'write the output of `atlas key export` to that file',
        },
      );
    }
  }
  const fromEnv = env['ATLAS_XPUB'];
  if (fromEnv !== undefined && fromEnv.trim().length > 0) return { text: fromEnv, source: 'ATLAS_XPUB' };
  const local = readAccountXpubFile(home);
  if (local !== undefined) return { text: local, source: keyFilePaths(home).accountXpub };
  throw new AtlasError('no public key to verify with', {
    exitCode: EXIT.key,
    hint: 'pass --xpub (the output of `atlas key export` on the machine that signed), --xpub-file, or set ATLAS_XPUB',
  });
}

export async function resolveAttestationKey(
  options: { attestationKey?: string },
  home: string,
  derivation: KeyDerivation,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TrustedAttestationKey> {
  const { parseAttestationPublicKey, deriveAttestationKey } = await import('../crypto/attestation-key.js');
  if (options.attestationKey !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.attestationKey, 'utf8');
    } catch (error) {
      throw new AtlasError(
        `cannot read the attestation key file ${options.attestationKey}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        {
          exitCode: EXIT.key,
          hint: 'write the output of `atlas key export --format pem --for attestations` to that file',
        },
      );
    }
    const source = `--attestation-key ${options.attestationKey}`;
    return { ...parseAttestationPublicKey(text, source), source };
  }
  const fromEnv = env['ATLAS_ATTESTATION_KEY'];
  if (fromEnv !== undefined && fromEnv.trim().length > 0)
    return { ...parseAttestationPublicKey(fromEnv, 'ATLAS_ATTESTATION_KEY'), source: 'ATLAS_ATTESTATION_KEY' };
  if (masterKeyExists(home)) {
    const key = deriveAttestationKey(readMasterSeed(home), derivation);
    return { key: key.key, keyid: key.keyid, source: `${keyFilePaths(home).masterKey} (${key.path})` };
  }
  throw new AtlasError('no attestation key to verify the envelopes with', {
    exitCode: EXIT.key,
    hint: 'pass --attestation-key FILE (the output of `atlas key export --format pem --for attestations` on the machine that signed) or set ATLAS_ATTESTATION_KEY',
  });
}

// atlas key export [--path m/...] [--pem | --format pem] [--for attestations]: the account xpub
// (what CI verifies receipts with), the public key at a path, as hex or PEM (SubjectPublicKeyInfo,
// secp256k1) for openssl and other tools, or the P-256 attestation key (always PEM).
import { exportAttestationKey, exportPublicKey } from '../../crypto/key-export.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { CliContext } from '../context.js';

interface KeyExportOptions {
  path?: string;
  pem?: boolean;
  format?: 'text' | 'pem';
  for?: 'receipts' | 'attestations';
}

export default async function keyExport(ctx: CliContext, opts: KeyExportOptions): Promise<number> {
  const config = await ctx.config();
  if (opts.for === 'attestations') {
    if (opts.path !== undefined) {
      throw new AtlasError('--path is for receipt keys; the attestation key has one documented path', {
        exitCode: EXIT.input,
        hint: 'drop --path (see docs/keys-and-verification.md)',
      });
    }
    const key = await exportAttestationKey(ctx.home, config.hooks.key_derivation);
    ctx.out.result(key, () => key.pem.trimEnd());
    return EXIT.ok;
  }
  const pem = opts.pem || opts.format === 'pem';
  const key = await exportPublicKey(ctx.home, config.hooks.key_derivation, opts.path);
  ctx.out.result(key, () => (pem ? key.pem.trimEnd() : opts.path ? key.public_key : (key.xpub ?? key.public_key)));
  return EXIT.ok;
}

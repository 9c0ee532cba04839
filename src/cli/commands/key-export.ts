// atlas key export [--path m/...] [--pem]: the account xpub (what CI verifies with), or the public
// key at a path, as hex or PEM (SubjectPublicKeyInfo, secp256k1) for openssl and other tools.
import { exportPublicKey } from '../../crypto/key-export.js';
import { EXIT } from '../../domain/errors.js';
import type { CliContext } from '../context.js';

export default async function keyExport(ctx: CliContext, opts: { path?: string; pem?: boolean }): Promise<number> {
  const config = await ctx.config();
  const key = await exportPublicKey(ctx.home, config.hooks.key_derivation, opts.path);
  ctx.out.result(key, () => (opts.pem ? key.pem.trimEnd() : opts.path ? key.public_key : key.xpub ?? key.public_key));
  return EXIT.ok;
}

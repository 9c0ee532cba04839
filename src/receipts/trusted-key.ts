// Which public key `atlas verify` trusts: --xpub, then --xpub-file, then $ATLAS_XPUB, then the
// local $ATLAS_HOME/keys/account.xpub. Never the xpub a bundle carries: anyone can write a bundle.
import { readFileSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import { keyFilePaths, readAccountXpubFile } from '../crypto/key-files.js';

export interface XpubText {
  text: string;
  /** Where it came from, for messages: "--xpub", "--xpub-file keys/ci.xpub", "ATLAS_XPUB", a path. */
  source: string;
}

export function resolveXpubText(options: { xpub?: string; xpubFile?: string }, home: string, env: NodeJS.ProcessEnv = process.env): XpubText {
  if (options.xpub !== undefined) return { text: options.xpub, source: '--xpub' };
  if (options.xpubFile !== undefined) {
    try {
      return { text: readFileSync(options.xpubFile, 'utf8'), source: `--xpub-file ${options.xpubFile}` };
    } catch (error) {
      throw new AtlasError(`cannot read the xpub file ${options.xpubFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
        exitCode: EXIT.key,
        hint: 'write the output of `atlas key export` to that file',
      });
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

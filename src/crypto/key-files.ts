// The key files under $ATLAS_HOME/keys (docs/keys-and-verification.md): master.key holds the
// secret seed (file 0600, folder 0700), account.xpub the public account key CI needs. Plain
// node:fs here so that checking a key costs no crypto library load.
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import { toTimestamp } from '../domain/time.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../store/atomic-write.js';
import { homePaths } from '../store/paths.js';

export const MASTER_KEY_FORMAT = 'atlas-master-key';
export const MASTER_SEED_BYTES = 32;

/** master.key on disk: a small JSON document; `seed` is the BIP32 seed as 64 lowercase hex. */
export interface MasterKeyFile {
  format: typeof MASTER_KEY_FORMAT;
  version: 1;
  created_at: string;
  seed: string;
}

export function keyFilePaths(home: string) {
  const p = homePaths(home);
  return { dir: p.keysDir, masterKey: p.masterKey, accountXpub: p.accountXpub };
}

function shellQuote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}

function modeText(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/**
 * Why a key file or its folder is unsafe, or undefined when it is private to its owner.
 * `publicOnly`: the folder holds no master.key (a CI machine with account.xpub alone), so only
 * others replacing its files matters; reading them is fine.
 */
export function permissionProblem(
  path: string,
  kind: 'file' | 'dir',
  options: { publicOnly?: boolean } = {},
): { message: string; fix: string } | undefined {
  // Windows has no POSIX mode bits to check.
  if (process.platform === 'win32') return undefined;
  const mode = statSync(path).mode;
  if (options.publicOnly) {
    if ((mode & 0o022) === 0) return undefined;
    const who = mode & 0o020 && mode & 0o002 ? 'group and others' : mode & 0o020 ? 'its group' : 'others';
    return {
      message: `${path} is writable by ${who} (mode ${modeText(mode)}); they could replace the public key receipts are checked with`,
      fix: `chmod go-w ${shellQuote(path)}`,
    };
  }
  if ((mode & 0o077) === 0) return undefined;
  const who = mode & 0o070 && mode & 0o007 ? 'group and others' : mode & 0o070 ? 'its group' : 'others';
  return {
    message: `${path} is accessible by ${who} (mode ${modeText(mode)}); atlas refuses to use a signing key ${kind === 'dir' ? 'in a folder ' : ''}others can read or replace`,
    fix: `chmod ${kind === 'dir' ? '700' : '600'} ${shellQuote(path)}`,
  };
}

function assertPrivate(path: string, kind: 'file' | 'dir'): void {
  const problem = permissionProblem(path, kind);
  if (problem) throw new AtlasError(problem.message, { exitCode: EXIT.key, hint: `run \`${problem.fix}\`` });
}

export function masterKeyExists(home: string): boolean {
  return existsSync(keyFilePaths(home).masterKey);
}

function missingKey(path: string): AtlasError {
  return new AtlasError(`no signing key: ${path} does not exist`, {
    exitCode: EXIT.key,
    hint: 'run `atlas init` to create the master key (once per ATLAS_HOME), then `atlas key export` for the xpub CI verifies with',
  });
}

/**
 * Reads the master seed after checking the folder and file permissions. Errors never quote the
 * file's content: it is a secret.
 */
export function readMasterSeed(home: string): Uint8Array {
  const { dir, masterKey } = keyFilePaths(home);
  if (!existsSync(masterKey)) throw missingKey(masterKey);
  assertPrivate(dir, 'dir');
  assertPrivate(masterKey, 'file');
  let text: string;
  try {
    text = readFileSync(masterKey, 'utf8');
  } catch (error) {
    throw new AtlasError(`cannot read ${masterKey}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, {
      exitCode: EXIT.key,
      cause: error,
    });
  }
  const broken = (what: string) =>
    new AtlasError(`${masterKey} is not a valid atlas master key (${what})`, {
      exitCode: EXIT.key,
      hint: 'restore it from your backup; receipts signed with it can only be re-verified with its xpub',
    });
  let data: Partial<MasterKeyFile>;
  try {
    data = JSON.parse(text) as Partial<MasterKeyFile>;
  } catch {
    throw broken('not JSON');
  }
  if (typeof data !== 'object' || data === null || data.format !== MASTER_KEY_FORMAT)
    throw broken(`"format" is not "${MASTER_KEY_FORMAT}"`);
  if (data.version !== 1) throw broken('unknown "version"; a newer atlas may have written it');
  if (typeof data.seed !== 'string' || !/^[0-9a-f]{64}$/.test(data.seed)) throw broken('"seed" is not 64 lowercase hex characters');
  return Uint8Array.from(Buffer.from(data.seed, 'hex'));
}

/** Creates keys/ as 0700 when missing and checks it otherwise. */
export function ensureKeysDir(home: string): void {
  const { dir } = keyFilePaths(home);
  mkdirSync(home, { recursive: true, mode: PRIVATE_DIR_MODE });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    // Another atlas process may have just created it; its permissions are checked either way.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  assertPrivate(dir, 'dir');
}

/** Writes master.key (0600, atomically). The caller holds the key lock and checked it is absent. */
export function writeMasterKeyFile(home: string, seed: Uint8Array, now: Date): void {
  const file: MasterKeyFile = {
    format: MASTER_KEY_FORMAT,
    version: 1,
    created_at: toTimestamp(now),
    seed: Buffer.from(seed).toString('hex'),
  };
  writeFileAtomic(keyFilePaths(home).masterKey, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
}

/** account.xpub's content (one line), or undefined when there is none. */
export function readAccountXpubFile(home: string): string | undefined {
  const { accountXpub } = keyFilePaths(home);
  if (!existsSync(accountXpub)) return undefined;
  return readFileSync(accountXpub, 'utf8').trim();
}

export function writeAccountXpubFile(home: string, xpub: string): void {
  // Public, but everything under ATLAS_HOME is private (atlas key export prints it).
  writeFileAtomic(keyFilePaths(home).accountXpub, `${xpub}\n`);
}

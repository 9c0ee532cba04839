// What `atlas key show` reports: the key files, their permissions, fingerprints and derivation.
// Never the seed or any private key.
import { existsSync, readFileSync } from 'node:fs';
import type { KeyDerivation } from '../domain/receipt.js';
import { accountPath } from '../domain/receipt.js';
import { homePaths } from '../store/paths.js';
import { keyFilePaths, permissionProblem, readAccountXpubFile, readMasterSeed } from './key-files.js';

export interface PermissionState {
  path: string;
  exists: boolean;
  ok: boolean;
  problem?: string;
  fix?: string;
}

export interface KeyInfo {
  keys_dir: PermissionState;
  master_key: PermissionState & { fingerprint?: string; created_at?: string; error?: string };
  account: {
    path: string;
    file: string;
    xpub?: string;
    xpub_fingerprint?: string;
    /** Whether account.xpub equals the xpub the master key gives for this derivation (null: cannot tell). */
    file_matches_master: boolean | null;
    error?: string;
  };
  derivation: KeyDerivation;
  receipt_key_path: string;
  next_task_index?: number;
}

function permissionState(path: string, kind: 'file' | 'dir', publicOnly = false): PermissionState {
  if (!existsSync(path)) return { path, exists: false, ok: false };
  const problem = permissionProblem(path, kind, { publicOnly });
  return problem ? { path, exists: true, ok: false, problem: problem.message, fix: problem.fix } : { path, exists: true, ok: true };
}

export async function inspectKeys(home: string, derivation: KeyDerivation): Promise<KeyInfo> {
  const paths = keyFilePaths(home);
  const hd = await import('./hd.js');
  const masterKey = permissionState(paths.masterKey, 'file');
  const info: KeyInfo = {
    // The folder must be private only when it holds the secret; with account.xpub alone (CI) it
    // may be readable by anyone, as long as nobody else can replace the xpub.
    keys_dir: permissionState(paths.dir, 'dir', !masterKey.exists),
    master_key: masterKey,
    account: { path: accountPath(derivation), file: paths.accountXpub, file_matches_master: null },
    derivation,
    receipt_key_path: `${accountPath(derivation)}/{task_index}/{receipt_index}`,
  };
  let masterXpub: string | undefined;
  if (info.master_key.exists && info.master_key.ok && info.keys_dir.ok) {
    try {
      const master = hd.masterFromSeed(readMasterSeed(home));
      info.master_key.fingerprint = hd.fingerprintHex(master);
      masterXpub = hd.deriveAccount(master, derivation).publicExtendedKey;
      const created = (JSON.parse(readFileSync(paths.masterKey, 'utf8')) as { created_at?: unknown }).created_at;
      if (typeof created === 'string') info.master_key.created_at = created;
    } catch (error) {
      info.master_key.ok = false;
      info.master_key.error = (error as Error).message;
    }
  }
  const fileXpub = readAccountXpubFile(home);
  const xpub = fileXpub ?? masterXpub;
  if (xpub !== undefined) {
    info.account.xpub = xpub;
    try {
      info.account.xpub_fingerprint = hd.fingerprintHex(hd.parseAccountXpub(xpub, paths.accountXpub));
    } catch (error) {
      info.account.error = (error as Error).message;
    }
  }
  if (fileXpub !== undefined && masterXpub !== undefined) info.account.file_matches_master = fileXpub === masterXpub;
  const counter = homePaths(home).taskIndex;
  if (existsSync(counter)) {
    try {
      const next = (JSON.parse(readFileSync(counter, 'utf8')) as { next_task_index?: unknown }).next_task_index;
      if (typeof next === 'number') info.next_task_index = next;
    } catch {
      // A broken counter is reported by the next allocation, with its path.
    }
  }
  return info;
}

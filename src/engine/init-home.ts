// Prepares ATLAS_HOME: its folders and a commented default config.yaml. Idempotent: called by
// `atlas init` and by every `atlas start`, it creates only what is missing and never overwrites.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderDefaultConfig } from '../config/format.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/atomic-write.js';
import { homePaths } from '../store/paths.js';

export interface InitResult {
  home: string;
  /** Paths created by this call (empty when everything existed). */
  created: string[];
}

function ensureDir(path: string, created: string[], mode?: number): void {
  if (existsSync(path)) return;
  mkdirSync(path, { recursive: true, ...(mode !== undefined ? { mode } : {}) });
  created.push(path);
}

/**
 * Writes `text` to `path` only if no file is there, atomically: the content is made durable in a
 * temp file, then hard-linked into place (link fails if the path exists, so two processes racing
 * cannot overwrite each other or a user's file).
 */
export function writeFileIfAbsent(path: string, text: string): boolean {
  if (existsSync(path)) return false;
  const temp = join(dirname(path), `.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temp);
  }
}

/** Async so that key creation (crypto) can join it without changing callers. */
export async function initializeHome(home: string): Promise<InitResult> {
  const paths = homePaths(home);
  const created: string[] = [];
  ensureDir(paths.home, created, PRIVATE_DIR_MODE);
  ensureDir(paths.workspacesDir, created, PRIVATE_DIR_MODE);
  ensureDir(paths.templatesDir, created, PRIVATE_DIR_MODE);
  if (writeFileIfAbsent(paths.config, renderDefaultConfig())) created.push(paths.config);
  return { home, created };
}

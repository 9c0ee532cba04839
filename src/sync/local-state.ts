// The workspace's own `.sandbox-state`: read leniently (missing → empty, corrupt → warned about,
// full sync, regenerated; newer format → a clear error), written atomically, and the lock that
// serializes every sync of one workspace (seed 001 §9.6).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { StateFile } from '../domain/sync-state.js';
import { parseStateFile, STATE_FILE_NAME, stateChunks } from '../domain/sync-state.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { withLock } from '../store/lock.js';
import { excludeStateFromGit } from './git-exclude.js';

export function statePath(root: string): string {
  return join(root, STATE_FILE_NAME);
}

/** The local state, or undefined when there is none usable (missing or corrupt: a full sync). */
export function readLocalState(root: string, warn: (text: string) => void): StateFile | undefined {
  const path = statePath(root);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.input, hint: 'check the permissions of the workspace folder' });
  }
  const parsed = parseStateFile(text, { local: true });
  if (parsed.ok) return parsed.state;
  if (parsed.kind === 'newer') {
    throw new AtlasError(`${path}: ${parsed.problem}`, { exitCode: EXIT.input, hint: 'upgrade atlas on this machine (a newer atlas wrote this workspace)' });
  }
  warn(`${path} is corrupt (${parsed.problem}); doing a full sync, which writes it again`);
  return undefined;
}

export function writeLocalState(root: string, state: StateFile): void {
  excludeStateFromGit(root);
  writeFileAtomic(statePath(root), textBytes(stateChunks(state, undefined, 'local')));
}

/** Text given in pieces as one buffer, never as one string (20 MB of JSON at 100,000 files). */
export function textBytes(chunks: Iterable<string>): Buffer {
  const parts: Buffer[] = [];
  for (const chunk of chunks) parts.push(Buffer.from(chunk, 'utf8'));
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** Runs `fn` holding the workspace's sync lock (a `.sandbox-state.lock` folder beside the state). */
export function withWorkspaceLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
  return withLock(statePath(root), fn);
}

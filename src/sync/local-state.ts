// The workspace's own `.sandbox-state`: read leniently (missing → empty, corrupt → warned about,
// full sync, regenerated; newer format → a clear error), written atomically, and the lock that
// serializes every sync of one workspace (seed 001 §9.6).
import { closeSync, constants, openSync, readFileSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { StateFile, StateParse } from '../domain/sync-state.js';
import { STATE_FILE_NAME, stateChunks } from '../domain/sync-state.js';
import { parseStateChunks, parseWhole } from '../domain/sync-state-parse.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { withLock } from '../store/lock.js';
import { excludeStateFromGit } from './git-exclude.js';

export function statePath(root: string): string {
  return join(root, STATE_FILE_NAME);
}

/** The local state, or undefined when there is none usable (missing or corrupt: a full sync). */
export function readLocalState(root: string, warn: (text: string) => void): StateFile | undefined {
  const path = statePath(root);
  let parsed: StateParse;
  try {
    // Never through a link: the folder is the agent's, and a link would have atlas read anything.
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      parsed = parseStateChunks(pieces(fd), { local: true }) ?? parseWhole(readFileSync(fd, 'utf8'), { local: true });
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      warn(`${path} is a symbolic link, not atlas's state; doing a full sync, which writes it again`);
      return undefined;
    }
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.input, hint: 'check the permissions of the workspace folder' });
  }
  if (parsed.ok) return parsed.state;
  if (parsed.kind === 'newer') {
    throw new AtlasError(`${path}: ${parsed.problem}`, { exitCode: EXIT.input, hint: 'upgrade atlas on this machine (a newer atlas wrote this workspace)' });
  }
  warn(`${path} is corrupt (${parsed.problem}); doing a full sync, which writes it again`);
  return undefined;
}

/** The file's text from its start, a piece at a time (20 MB at 100,000 files is never held whole). */
function* pieces(fd: number): Generator<string> {
  const decoder = new StringDecoder('utf8');
  const buffer = Buffer.allocUnsafe(PIECE);
  let position = 0;
  for (let n = readSync(fd, buffer, 0, PIECE, position); n > 0; n = readSync(fd, buffer, 0, PIECE, position)) {
    position += n;
    yield decoder.write(buffer.subarray(0, n));
  }
  yield decoder.end();
}

const PIECE = 1024 * 1024;

export function writeLocalState(root: string, state: StateFile): void {
  excludeStateFromGit(root);
  // In pieces, as they are made: 20 MB of JSON at 100,000 files is never held whole.
  writeFileAtomic(statePath(root), stateChunks(state, undefined, 'local'));
}

/** Runs `fn` holding the workspace's sync lock (a `.sandbox-state.lock` folder beside the state). */
export function withWorkspaceLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
  return withLock(statePath(root), fn);
}

// The workspace's own `.sandbox-state`: read leniently (missing → empty, corrupt → warned about,
// full sync, regenerated; newer format → a clear error), written atomically, and the lock that
// serializes every sync of one workspace (seed 001 §9.6).
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { StateFile, StateParse } from '../../domain/sync-state.js';
import { STATE_FILE_NAME, stateChunks } from '../../domain/sync-state.js';
import type { ParseOptions } from '../../domain/sync-state-parse.js';
import { cappedText, parseStateStream, parseWhole } from '../../domain/sync-state-parse.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { withLock } from '../../store/lock.js';
import { excludeStateFromGit } from './git-exclude.js';
import { readTextPieces } from './stream-file.js';

export function statePath(root: string): string {
  return join(root, STATE_FILE_NAME);
}

/**
 * A state parsed as it is read (`read` gives its text in pieces, anew at each call; undefined when
 * there is none). One not laid out as atlas writes it (an older atlas's, or edited by hand) is
 * read again whole, and parsed so.
 */
export async function parseReading(
  read: () => Promise<AsyncIterable<string> | undefined>,
  options: ParseOptions,
): Promise<StateParse | undefined> {
  const pieces = await read();
  if (pieces === undefined) return undefined;
  const parsed = await parseStateStream(pieces, options);
  if (parsed !== undefined) return parsed;
  const again = await read();
  if (again === undefined) return undefined;
  const whole = await cappedText(again);
  return 'problem' in whole ? { ok: false, kind: 'corrupt', problem: whole.problem } : parseWhole(whole.text, options);
}

/** The local state, or undefined when there is none usable (missing or corrupt: a full sync). */
export async function readLocalState(root: string, warn: (text: string) => void): Promise<StateFile | undefined> {
  const path = statePath(root);
  let parsed: StateParse;
  try {
    // Never through a link: the folder is the agent's, and a link would have atlas read anything.
    parsed = (await parseReading(() => readTextPieces(path), { local: true }))!;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      warn(`${path} is a symbolic link, not atlas's state; doing a full sync, which writes it again`);
      return undefined;
    }
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, {
      exitCode: EXIT.input,
      hint: 'check the permissions of the workspace folder',
    });
  }
  if (parsed.ok) return parsed.state;
  if (parsed.kind === 'newer') {
    throw new AtlasError(`${path}: ${parsed.problem}`, {
      exitCode: EXIT.input,
      hint: 'upgrade atlas on this machine (a newer atlas wrote this workspace)',
    });
  }
  warn(`${path} is corrupt (${parsed.problem}); doing a full sync, which writes it again`);
  return undefined;
}

export function writeLocalState(root: string, state: StateFile): void {
  excludeStateFromGit(root);
  // In pieces, as they are made: 20 MB of JSON at 100,000 files is never held whole.
  writeFileAtomic(statePath(root), stateChunks(state, undefined, 'local'));
}

/** Runs `fn` holding the workspace's sync lock (a `.sandbox-state.lock` folder beside the state). */
export async function withWorkspaceLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
  // A folder this user may not write cannot hold the lock either: said as it is, not as a lock
  // another process holds (the lock's own error).
  try {
    await access(root, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new AtlasError(`${root} is not writable by this user (${code}): a sync writes its files and its lock there`, {
        exitCode: EXIT.failure,
        hint:
          code === 'EROFS'
            ? 'the file system is read-only: choose a folder on a writable one'
            : "run as the folder's owner, or give this user write access (chmod u+w), or choose another folder",
        cause: error,
      });
    }
  }
  return withLock(statePath(root), fn);
}

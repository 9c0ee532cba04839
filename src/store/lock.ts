// Inter-process locks around every read-modify-write (proper-lockfile: a lock directory whose
// mtime is refreshed while held, so a lock left by a killed process goes stale and is taken over).
import { AtlasError, EXIT } from '../domain/errors.js';

const STALE_MS = 5_000;

export async function withLock<T>(path: string, fn: () => Promise<T> | T): Promise<T> {
  let release: () => Promise<void>;
  // Loaded when a lock is first taken: read-only commands never pay for it (nor for graceful-fs).
  const { default: lockfile } = await import('proper-lockfile');
  try {
    release = await lockfile.lock(path, {
      realpath: false,
      stale: STALE_MS,
      // Up to ~30 s of waiting: enough to outlast a stale lock left by a killed process.
      retries: { retries: 300, factor: 1.15, minTimeout: 5, maxTimeout: 100, randomize: true },
    });
  } catch (error) {
    throw new AtlasError(`could not lock ${path}: ${(error as Error).message}`, {
      exitCode: EXIT.failure,
      hint: 'another atlas process is holding it; wait for it to finish, or remove the stale .lock directory if none is running',
      cause: error,
    });
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => {
      // Compromised or already released (e.g. taken over as stale): nothing more to do.
    });
  }
}

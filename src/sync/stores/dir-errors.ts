// The errors of a folder store: a failure of the store's disk with what to do about it, and a
// symbolic link found inside the store (never followed).
import { AtlasError, EXIT } from '../../domain/errors.js';

export function storeError(error: unknown, what: string): AtlasError {
  const code = (error as NodeJS.ErrnoException).code;
  const hint =
    code === 'EACCES' || code === 'EPERM'
      ? 'check that this user may read and write the store folder (sync.store), e.g. chmod u+rwx'
      : code === 'ENOSPC'
        ? "the store's disk is full: free space, or point sync.store elsewhere"
        : 'check sync.store and run the command again';
  return new AtlasError(`${what}: ${(error as Error).message}`, { exitCode: EXIT.failure, hint, cause: error });
}

export function linkRefused(path: string): AtlasError {
  return new AtlasError(
    `the store holds a symbolic link at ${path}; atlas never follows links inside a store, so nothing was read or written through it`,
    {
      exitCode: EXIT.failure,
      hint: 'the store was changed outside atlas: look at that entry and remove it by hand (atlas never stores links as links in a folder store)',
    },
  );
}

// Removing a version from a folder store (a prune), or measuring what that would remove: never
// through a symbolic link on the way down from the store folder.
import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { STATE_FILE_NAME } from '../../domain/sync-state.js';
import { storeError } from './dir-errors.js';
import type { RemovedVersion } from './store.js';
import { checkVersionAddress } from './store.js';

export async function removeVersionFolder(
  location: string,
  tree: string,
  version: string,
  options: { dryRun?: boolean },
): Promise<RemovedVersion> {
  checkVersionAddress(tree, version);
  const parts = [...tree.split('/'), version];
  // Every folder from the store down to the version must be a real folder: a symlink on the way
  // would take the removal outside the store.
  for (let i = 1; i <= parts.length; i++) {
    const path = join(location, ...parts.slice(0, i));
    const st = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw storeError(error, `cannot read ${path}`);
    });
    if (st === undefined) return { objects: 0, bytes: 0, incomplete: true };
    if (!st.isDirectory()) {
      throw new AtlasError(`${path} is ${st.isSymbolicLink() ? 'a symlink' : 'not a folder'}: refusing to remove anything through it`, {
        exitCode: EXIT.failure,
        hint: 'the store was changed outside atlas: look at it, and move that entry away by hand',
      });
    }
  }
  const folder = join(location, ...parts);
  const measured = await measureFolder(folder).catch((error: unknown) => {
    throw storeError(error, `cannot list ${folder}`);
  });
  if (options.dryRun) return measured;
  try {
    // Hard links: removing this version's names leaves the other versions' files whole.
    await rm(join(folder, STATE_FILE_NAME), { force: true });
    await rm(folder, { recursive: true, force: true });
  } catch (error) {
    throw storeError(error, `cannot remove version ${version} of ${tree} from ${location}`);
  }
  return measured;
}

/** Files under a folder (symlinks counted, never followed) and their bytes. */
async function measureFolder(folder: string): Promise<RemovedVersion> {
  const found = { objects: 0, bytes: 0, incomplete: true };
  const walk = async (dir: string, top: boolean): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await walk(path, false);
        continue;
      }
      if (top && entry.name === STATE_FILE_NAME) found.incomplete = false;
      found.objects++;
      found.bytes += (await lstat(path)).size;
    }
  };
  await walk(folder, true);
  return found;
}

// Files that were one file under several names on the pushing machine (hard links, rsync -aH):
// their content is stored once (content addressing), and a pull makes them one file again.
import { linkSync, lstatSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { StateFile } from '../../domain/sync-state.js';
import { dropTemps, prepareTemps, tempPathFor } from '../scan/safe-fs.js';
import { realFolder } from './open-folders.js';

/**
 * Links each group's other names to its first, once every file is written: only names that are
 * regular files here holding the same content in the version (a group naming anything else is a
 * hostile or stale manifest's: left as separate files). Returns the names linked.
 */
export async function relinkGroups(root: string, state: Pick<StateFile, 'files' | 'hardlinks'>): Promise<number> {
  if (!state.hardlinks?.length) return 0;
  await prepareTemps(root);
  try {
    return relink(root, state.hardlinks, state.files);
  } finally {
    await dropTemps(root);
  }
}

function relink(root: string, groups: string[][], files: StateFile['files']): number {
  const wanted = new Set(groups.flat());
  const checksums = new Map(files.filter((f) => wanted.has(f.path) && f.link === undefined).map((f) => [f.path, f.checksum]));
  let linked = 0;
  // Never through a link planted on the way (it may point anywhere): each folder a real one.
  const safe = (path: string) => dirname(path) === '.' || realFolder(root, dirname(path)) !== undefined;
  for (const [first, ...others] of groups) {
    const sum = checksums.get(first!);
    if (sum === undefined || !others.every((p) => checksums.get(p) === sum) || ![first!, ...others].every(safe)) continue;
    const target = lstatSync(join(root, first!), { throwIfNoEntry: false });
    if (!target?.isFile()) continue;
    for (const other of others) {
      const here = lstatSync(join(root, other), { throwIfNoEntry: false });
      if (!here?.isFile() || here.ino === target.ino) continue;
      // A new name beside, renamed over the copy: the path is never missing.
      const temp = tempPathFor(root);
      linkSync(join(root, first!), temp);
      try {
        renameSync(temp, join(root, other));
      } catch (error) {
        rmSync(temp, { force: true });
        throw error;
      }
      linked++;
    }
  }
  return linked;
}

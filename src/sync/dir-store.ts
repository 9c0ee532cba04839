// A store in a folder (default `$ATLAS_HOME/store`, or a shared mount). A new version is built in
// a staging folder and renamed into place whole; unchanged files are hard links to the previous
// version's (no bytes copied, no extra space), with a plain copy where links are not allowed.
import { createReadStream } from 'node:fs';
import { access, constants, copyFile, link, lstat, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { sortVersions } from '../domain/sync-plan.js';
import { STATE_FILE_NAME } from '../domain/sync-state.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import type { Received } from './safe-fs.js';
import type { RemovedVersion, StoredTask, SyncStore, VersionWriter } from './store.js';
import { checkVersionAddress, parseTaskIndexName, TASK_INDEX, taskIndexName } from './store.js';
import { streamToNewFile } from './stream-file.js';

function storeError(error: unknown, what: string): AtlasError {
  const code = (error as NodeJS.ErrnoException).code;
  const hint =
    code === 'EACCES' || code === 'EPERM'
      ? 'check that this user may read and write the store folder (sync.store), e.g. chmod u+rwx'
      : code === 'ENOSPC'
        ? 'the store\'s disk is full: free space, or point sync.store elsewhere'
        : 'check sync.store and run the command again';
  return new AtlasError(`${what}: ${(error as Error).message}`, { exitCode: EXIT.failure, hint, cause: error });
}

let staging = 0;

export class DirectoryStore implements SyncStore {
  readonly kind = 'dir' as const;
  constructor(readonly location: string) {}

  private dir(...parts: string[]): string {
    return join(this.location, ...parts);
  }

  async checkAccess(): Promise<void> {
    try {
      await mkdir(this.location, { recursive: true });
      await access(this.location, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (error) {
      throw storeError(error, `cannot use the store folder ${this.location}`);
    }
  }

  async putTaskIndex(taskId: string, workspace: string): Promise<void> {
    try {
      await mkdir(this.dir(TASK_INDEX), { recursive: true });
      writeFileAtomic(this.dir(TASK_INDEX, taskIndexName(taskId, workspace)), '');
    } catch (error) {
      throw storeError(error, `cannot write to the store folder ${this.location}`);
    }
  }

  async listTaskIndex(): Promise<StoredTask[]> {
    try {
      const names = await readdir(this.dir(TASK_INDEX));
      return names.map(parseTaskIndexName).filter((t): t is StoredTask => t !== undefined);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeError(error, `cannot list ${this.dir(TASK_INDEX)}`);
    }
  }

  private async listChildren(path: string): Promise<string[]> {
    try {
      const entries = await readdir(this.dir(path), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeError(error, `cannot list ${this.dir(path)}`);
    }
  }

  async listVersionNames(tree: string): Promise<string[]> {
    return sortVersions(await this.listChildren(tree));
  }

  async readState(tree: string, version: string): Promise<string | undefined> {
    try {
      return await readFile(this.dir(tree, version, STATE_FILE_NAME), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw storeError(error, `cannot read ${this.dir(tree, version, STATE_FILE_NAME)}`);
    }
  }

  async download(tree: string, version: string, path: string, dest: string): Promise<Received> {
    const source = this.dir(tree, version, ...path.split('/'));
    try {
      return await streamToNewFile(createReadStream(source), dest);
    } catch (error) {
      throw storeError(error, `cannot read ${source} from the store`);
    }
  }

  async beginVersion(tree: string, version: string): Promise<VersionWriter> {
    const final = this.dir(tree, version);
    const stage = this.dir(tree, `.incoming-${version}-${process.pid}-${++staging}`);
    try {
      await mkdir(stage, { recursive: true });
    } catch (error) {
      throw storeError(error, `cannot write to the store folder ${this.location}`);
    }
    const made = new Set<string>();
    const parentOf = async (path: string): Promise<string> => {
      const target = join(stage, ...path.split('/'));
      const parent = dirname(target);
      if (!made.has(parent)) {
        await mkdir(parent, { recursive: true });
        made.add(parent);
      }
      return target;
    };
    return {
      reuse: async (fromVersion, from, to) => {
        const source = this.dir(tree, fromVersion, ...from.split('/'));
        const target = await parentOf(to);
        try {
          await link(source, target);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') return false;
          if (code !== 'EPERM' && code !== 'EXDEV' && code !== 'EMLINK' && code !== 'ENOTSUP') throw storeError(error, `cannot link ${source}`);
          await copyFile(source, target);
        }
        return true;
      },
      upload: async (path, localFile) => {
        const target = await parentOf(path);
        try {
          return await streamToNewFile(createReadStream(localFile), target);
        } catch (error) {
          throw storeError(error, `cannot copy ${localFile} into the store`);
        }
      },
      commit: async (stateText) => {
        try {
          writeFileAtomic(join(stage, STATE_FILE_NAME), stateText);
          await rename(stage, final);
        } catch (error) {
          throw storeError(error, `cannot finish version ${version} in ${this.dir(tree)}`);
        }
      },
      abort: async () => {
        await rm(stage, { recursive: true, force: true }).catch(() => undefined);
      },
    };
  }

  async removeVersion(tree: string, version: string, options: { dryRun?: boolean } = {}): Promise<RemovedVersion> {
    checkVersionAddress(tree, version);
    const parts = [...tree.split('/'), version];
    // Every folder from the store down to the version must be a real folder: a symlink on the way
    // would take the removal outside the store.
    for (let i = 1; i <= parts.length; i++) {
      const path = this.dir(...parts.slice(0, i));
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
    const folder = this.dir(...parts);
    const measured = await measureFolder(folder).catch((error: unknown) => {
      throw storeError(error, `cannot list ${folder}`);
    });
    if (options.dryRun) return measured;
    try {
      // Hard links: removing this version's names leaves the other versions' files whole.
      await rm(join(folder, STATE_FILE_NAME), { force: true });
      await rm(folder, { recursive: true, force: true });
    } catch (error) {
      throw storeError(error, `cannot remove version ${version} of ${tree} from ${this.location}`);
    }
    return measured;
  }
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

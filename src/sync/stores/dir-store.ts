// A store in a folder (default `$ATLAS_HOME/store`, or a shared mount). Contents are files named by
// their SHA-256 in the tree's blob area, each written to a temp file and renamed to its name; a
// version's manifest is staged in a folder renamed into place whole.
// Nothing below the store folder is followed when it is a symbolic link: whoever could write the
// store could otherwise have a pull copy in any file of the pulling machine (issue 18), so every
// folder on the way is checked with lstat and files are opened with O_NOFOLLOW.
import { access, constants, lstat, mkdir, open, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { sortVersions } from '../../domain/sync-plan.js';
import { BLOB_GRACE_SECONDS } from '../../domain/sync-retention.js';
import { BLOB_AREA, blobPath, SHA256_PATTERN, STATE_FILE_NAME } from '../../domain/sync-state.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { bodyPieces } from '../scan/body-pieces.js';
import { mapPool } from '../scan/pool.js';
import type { NewFileWriter, Received, Written } from '../scan/stream-file.js';
import { readTextPieces, rethrown, streamBlobToNewFile, streamToNewFile } from '../scan/stream-file.js';
import { linkRefused, storeError } from './dir-errors.js';
import { removeVersionFolder } from './dir-remove.js';
import type { PackReader, RemovedVersion, StoredTask, SyncStore } from './store.js';
import { LOCK_AREA, LOCK_NAME, parseTaskIndexName, TASK_INDEX, taskIndexName } from './store.js';

let staging = 0;

/** Where blobs are written before they are renamed to their name (`<tree>/.blobs/.incoming`). */
const INCOMING = '.incoming';

/** Opens for reading without following a symbolic link in the last component. */
const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW;

export class DirectoryStore implements SyncStore {
  readonly kind = 'dir' as const;
  constructor(readonly location: string) {}

  private dir(...parts: string[]): string {
    return join(this.location, ...parts);
  }

  /** Folders below the store already found real in this run: each is checked once. */
  private readonly realFolders = new Set<string>();

  /**
   * The path of `parts` under the store, once every folder on the way is known not to be a
   * symbolic link (a missing one ends the check: nothing below it exists either). The last part
   * is the caller's to open with O_NOFOLLOW, or to check itself.
   */
  private async noLinks(...parts: string[]): Promise<string> {
    const segments = parts.flatMap((p) => p.split('/'));
    for (let i = 1; i < segments.length; i++) {
      const folder = this.dir(...segments.slice(0, i));
      if (this.realFolders.has(folder)) continue;
      let st: import('node:fs').Stats;
      try {
        st = await lstat(folder);
      } catch (error) {
        // Missing, or a file on the way: the operation itself fails with its own message.
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') break;
        throw storeError(error, `cannot read ${folder}`);
      }
      if (st.isSymbolicLink()) throw linkRefused(folder);
      this.realFolders.add(folder);
    }
    return this.dir(...segments);
  }

  private async realFolder(...parts: string[]): Promise<string> {
    const path = await this.noLinks(...parts);
    const st = await lstat(path).catch(() => undefined);
    if (st?.isSymbolicLink()) throw linkRefused(path);
    return path;
  }

  async checkAccess(options: { reading?: boolean } = {}): Promise<void> {
    // A path that is there but is no folder is the setting's mistake, not a failure to retry.
    const st = await stat(this.location).catch(() => undefined);
    if (st && !st.isDirectory()) {
      throw new AtlasError(`sync.store ${this.location} is a file, not a folder`, {
        exitCode: EXIT.input,
        hint: 'point sync.store at a folder (it is made when missing), or move that file away',
      });
    }
    try {
      await mkdir(this.location, { recursive: true, mode: PRIVATE_DIR_MODE });
      // A reader takes no lock in the store and writes nothing there: a read-only copy serves it.
      await access(this.location, constants.R_OK | constants.X_OK | (options.reading ? 0 : constants.W_OK));
    } catch (error) {
      throw storeError(error, `cannot ${options.reading ? 'read' : 'use'} the store folder ${this.location}`);
    }
  }

  async putTaskIndex(taskId: string, workspace: string): Promise<void> {
    try {
      await mkdir(await this.realFolder(TASK_INDEX), { recursive: true, mode: PRIVATE_DIR_MODE });
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
    const folder = await this.realFolder(path);
    try {
      const entries = await readdir(folder, { withFileTypes: true });
      const link = entries.find((e) => e.isSymbolicLink());
      if (link) throw linkRefused(join(folder, link.name));
      return entries.filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeError(error, `cannot list ${this.dir(path)}`);
    }
  }

  async listVersionNames(tree: string): Promise<string[]> {
    return sortVersions(await this.listChildren(tree));
  }

  async readState(tree: string, version: string): Promise<AsyncIterable<string> | undefined> {
    const path = await this.noLinks(tree, version, STATE_FILE_NAME);
    const failed = (error: unknown) => storeError(error, `cannot read ${this.dir(tree, version, STATE_FILE_NAME)}`);
    try {
      return rethrown(await readTextPieces(path), failed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw linkRefused(path);
      throw failed(error);
    }
  }

  async download(tree: string, version: string, path: string, dest: string): Promise<Received> {
    return copyOut(await this.noLinks(tree, version, path), dest, streamToNewFile);
  }

  private blobFile(tree: string, sha256: string): Promise<string> {
    if (!SHA256_PATTERN.test(sha256)) throw new AtlasError(`not a blob name: ${JSON.stringify(sha256)}`, { exitCode: EXIT.failure });
    return this.noLinks(tree, blobPath(sha256));
  }

  async getBlob(tree: string, sha256: string, dest: string): Promise<Written> {
    return copyOut(await this.blobFile(tree, sha256), dest, streamBlobToNewFile);
  }

  /** One lstat per blob: a local folder answers faster than it lists. */
  async findBlobs(tree: string, wanted: readonly { sha256: string; size: number }[]): Promise<Set<string>> {
    const found = new Set<string>();
    await mapPool(wanted, 16, async ({ sha256: sha }) => {
      if ((await this.blobModifiedMs(tree, sha)) !== undefined) found.add(sha);
    });
    return found;
  }

  async putBlob(tree: string, localFile: string): Promise<Received> {
    return this.storeBlob(
      tree,
      async () => (await open(localFile, READ_NO_FOLLOW)).createReadStream(),
      `cannot copy ${localFile} into the store`,
    );
  }

  async putBytes(tree: string, body: Buffer): Promise<string> {
    return (await this.storeBlob(tree, async () => [body], `cannot write ${body.length} bytes into the store`)).sha256;
  }

  /**
   * Written to a temp file in the blob area, hashed as it is written, then renamed to the name of
   * what was written: a blob's name always matches its bytes, and a killed push leaves only a temp
   * file (removed by garbage collection once past the grace period).
   */
  private async storeBlob(
    tree: string,
    openSource: () => Promise<AsyncIterable<Buffer | string> | Iterable<Buffer>>,
    what: string,
  ): Promise<Received> {
    const incoming = await this.realFolder(tree, BLOB_AREA, INCOMING);
    await mkdir(incoming, { recursive: true, mode: PRIVATE_DIR_MODE }).catch((error: unknown) => {
      throw storeError(error, `cannot write to the store folder ${this.location}`);
    });
    const temp = join(incoming, `${process.pid}-${++staging}`);
    let source: Awaited<ReturnType<typeof openSource>> | undefined;
    try {
      source = await openSource();
      // The store holds the person's files, whatever their own modes: nobody else's to read.
      const got = await streamToNewFile(source, temp, PRIVATE_FILE_MODE);
      const final = await this.blobFile(tree, got.sha256);
      await mkdir(dirname(final), { recursive: true, mode: PRIVATE_DIR_MODE });
      await rename(temp, final);
      return got;
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw storeError(error, what);
    } finally {
      // A file's stream closes its file, also when the temp file could not be made.
      (source as { destroy?: () => void } | undefined)?.destroy?.();
    }
  }

  async streamPackRange<T>(tree: string, pack: string, start: number, length: number, consume: PackReader<T>): Promise<T | undefined> {
    const source = await this.blobFile(tree, pack);
    const handle = await open(source, READ_NO_FOLLOW).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error.code === 'ELOOP' ? linkRefused(source) : storeError(error, `cannot read ${source} from the store`);
    });
    if (!handle) return undefined;
    try {
      return await consume(
        bodyPieces(handle.createReadStream({ start, end: start + length - 1, autoClose: false, highWaterMark: 256 * 1024 }), 0, length),
      );
    } finally {
      await handle.close();
    }
  }

  async readPackRange(tree: string, pack: string, start: number, length: number, into?: Buffer): Promise<Buffer | undefined> {
    const source = await this.blobFile(tree, pack);
    const body = into ?? Buffer.allocUnsafe(length);
    let handle: import('node:fs/promises').FileHandle | undefined;
    try {
      handle = await open(source, READ_NO_FOLLOW);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await handle.read(body, got, length - got, start + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      // A pack shorter than its manifest says: what is there is returned, and the pull's check of
      // each content against its hashes names the file.
      return body.subarray(0, got);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw linkRefused(source);
      throw storeError(error, `cannot read ${source} from the store`);
    } finally {
      await handle?.close();
    }
  }

  async touchBlob(tree: string, sha256: string): Promise<boolean> {
    const path = await this.blobFile(tree, sha256);
    const now = new Date();
    return utimes(path, now, now).then(
      () => true,
      () => false,
    );
  }

  async blobModifiedMs(tree: string, sha256: string): Promise<number | undefined> {
    const st = await lstat(await this.blobFile(tree, sha256)).catch(() => undefined);
    return st?.isFile() ? st.mtimeMs : undefined;
  }

  async listBlobs(tree: string): Promise<Map<string, { size: number; modifiedMs: number }>> {
    const area = await this.realFolder(tree, BLOB_AREA);
    const found = new Map<string, { size: number; modifiedMs: number }>();
    const fans = await readdir(area, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw storeError(error, `cannot list ${area}`);
    });
    for (const fan of fans) {
      if (fan.isSymbolicLink()) throw linkRefused(join(area, fan.name));
      if (!fan.isDirectory() || !/^[0-9a-f]{2}$/.test(fan.name)) continue;
      for (const name of await readdir(join(area, fan.name))) {
        if (!SHA256_PATTERN.test(name) || !name.startsWith(fan.name)) continue;
        const st = await lstat(join(area, fan.name, name));
        if (st.isFile()) found.set(name, { size: st.size, modifiedMs: st.mtimeMs });
      }
    }
    return found;
  }

  async removeBlobs(tree: string, sha256s: readonly string[]): Promise<void> {
    await mapPool(sha256s, 16, async (sha) => {
      const path = await this.blobFile(tree, sha);
      await rm(path, { force: true }).catch((error: unknown) => {
        throw storeError(error, `cannot remove ${path}`);
      });
    });
  }

  async removeStaleUploads(tree: string, nowMs: number): Promise<void> {
    const incoming = await this.realFolder(tree, BLOB_AREA, INCOMING);
    for (const name of await readdir(incoming).catch(() => [] as string[])) {
      const st = await lstat(join(incoming, name)).catch(() => undefined);
      if (st?.isFile() && nowMs - st.mtimeMs > BLOB_GRACE_SECONDS * 1000) await rm(join(incoming, name), { force: true });
    }
  }

  async commitVersion(tree: string, version: string, manifest: string | Iterable<string>): Promise<boolean> {
    const final = await this.realFolder(tree, version);
    // Staged then renamed: the version folder appears with its manifest inside, never without. A
    // rename onto a folder that holds files fails: a concurrent push that picked the same name.
    const stage = this.dir(tree, `.incoming-${version}-${process.pid}-${++staging}`);
    try {
      await mkdir(stage, { recursive: true, mode: PRIVATE_DIR_MODE });
      writeFileAtomic(join(stage, STATE_FILE_NAME), manifest);
      await rename(stage, final);
      return true;
    } catch (error) {
      await rm(stage, { recursive: true, force: true }).catch(() => undefined);
      const code = (error as NodeJS.ErrnoException).code;
      if (
        (code === 'ENOTEMPTY' || code === 'EEXIST') &&
        (await lstat(join(final, STATE_FILE_NAME)).then(
          () => true,
          () => false,
        ))
      )
        return false;
      throw storeError(error, `cannot finish version ${version} in ${this.dir(tree)}`);
    }
  }

  async putLock(tree: string, name: string): Promise<void> {
    try {
      await mkdir(await this.realFolder(tree, LOCK_AREA), { recursive: true, mode: PRIVATE_DIR_MODE });
      writeFileAtomic(this.dir(tree, LOCK_AREA, name), '');
    } catch (error) {
      throw storeError(error, `cannot write to the store folder ${this.location}`);
    }
  }

  async listLocks(tree: string): Promise<{ name: string; modifiedMs: number }[]> {
    const folder = await this.realFolder(tree, LOCK_AREA);
    const names = await readdir(folder).catch((error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' ? [] : Promise.reject(storeError(error, `cannot list ${folder}`)),
    );
    const found = await mapPool(
      names.filter((n) => LOCK_NAME.test(n)),
      16,
      async (name) => ({ name, st: await lstat(join(folder, name)).catch(() => undefined) }),
    );
    return found.filter((f) => f.st?.isFile()).map((f) => ({ name: f.name, modifiedMs: f.st!.mtimeMs }));
  }

  async removeLock(tree: string, name: string): Promise<void> {
    await rm(join(await this.realFolder(tree, LOCK_AREA), name), { force: true });
  }

  async removeVersion(tree: string, version: string, options: { dryRun?: boolean } = {}): Promise<RemovedVersion> {
    return removeVersionFolder(this.location, tree, version, options);
  }
}

/** The store's file `source` into a new file `dest` by `write`; a link at `source` is refused. */
async function copyOut<R extends Written>(source: string, dest: string, write: NewFileWriter<R>): Promise<R> {
  try {
    const stream = (await open(source, READ_NO_FOLLOW)).createReadStream();
    try {
      return await write(stream, dest);
    } finally {
      stream.destroy(); // closes the file, also when the destination could not be made
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw linkRefused(source);
    throw storeError(error, `cannot read ${source} from the store`);
  }
}

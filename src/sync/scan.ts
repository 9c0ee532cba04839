// The workspace as a list of FileEntry: a walk that skips .git, symlinks, atlas's own files and
// `sync.exclude`, and MD5s that are reused from the last state only when nothing can have changed.
import { createHash } from 'node:crypto';
import { createReadStream, lstatSync } from 'node:fs';
import { readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExcludeRule, FileEntry, StateFile } from '../domain/sync-state.js';
import { isExcluded } from '../domain/sync-state.js';
import { isSandboxStubFile } from '../exec/sandbox/litter.js';
import { mapPool } from './pool.js';

export interface ScanResult {
  files: FileEntry[];
  /** Symlinks are never synced: what they point to is not the workspace's to send. */
  symlinks: string[];
  bytesHashed: number;
}

/** Below this a file is read whole; above, streamed. */
const WHOLE_READ_LIMIT = 8 * 1024 * 1024;

export async function md5File(path: string, size?: number): Promise<string> {
  if (size !== undefined && size <= WHOLE_READ_LIMIT) return createHash('md5').update(await readFile(path)).digest('hex');
  const hash = createHash('md5');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * A checksum recorded by the last sync still holds when size and mtime match and the mtime is
 * before that sync: a write after it would carry a later mtime.
 */
export function cachedChecksum(previous: StateFile | undefined, byPath: ReadonlyMap<string, FileEntry>, path: string, size: number, mtimeS: number): string | undefined {
  const known = byPath.get(path);
  if (!previous || !known || previous.last_synced_at === 0) return undefined;
  return known.size === size && known.modified_at === mtimeS && mtimeS < previous.last_synced_at ? known.checksum : undefined;
}

interface Found {
  path: string;
  abs: string;
  size: number;
  mtimeS: number;
}

/** `readOnly` (status) leaves a killed pull's temp files in place. */
export async function scanWorkspace(root: string, rules: readonly ExcludeRule[], previous?: StateFile, readOnly = false): Promise<ScanResult> {
  const found: Found[] = [];
  const symlinks: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    await Promise.all(
      entries.map(async (d) => {
        const path = rel ? `${rel}/${d.name}` : d.name;
        const abs = join(dir, d.name);
        if (d.isSymbolicLink()) {
          if (!isExcluded(path, false, rules)) symlinks.push(path);
          return;
        }
        if (d.isDirectory()) {
          if (!isExcluded(path, true, rules)) await walk(abs, path);
          return;
        }
        if (!d.isFile()) return;
        if (/^\.atlas-sync-.*\.tmp$/.test(d.name)) {
          // Left by a pull that was killed: ours, never the person's.
          if (!readOnly) await unlink(abs).catch(() => undefined);
          return;
        }
        if (isExcluded(path, false, rules)) return;
        // Synchronous: 10,000 lstats take ~50 ms so, ~200 ms as thread-pool round trips, most of
        // a no-op sync's time (docs/performance.md#workspace-sync).
        const st = lstatSync(abs);
        // A stub a killed sandboxed run left in the worktree is not the person's work.
        if (st.size === 0 && (await isSandboxStubFile(path, st))) return;
        found.push({ path, abs, size: st.size, mtimeS: seconds(st.mtimeMs) });
      }),
    );
  };
  await walk(root, '');
  const byPath = new Map((previous?.files ?? []).map((f) => [f.path, f]));
  let bytesHashed = 0;
  const files = await mapPool(found, 8, async (f) => {
    let checksum = cachedChecksum(previous, byPath, f.path, f.size, f.mtimeS);
    if (checksum === undefined) {
      checksum = await md5File(f.abs, f.size);
      bytesHashed += f.size;
    }
    return { path: f.path, checksum, size: f.size, modified_at: f.mtimeS };
  });
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, symlinks: symlinks.sort(), bytesHashed };
}

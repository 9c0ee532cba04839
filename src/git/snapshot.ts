// File snapshots for checkpoints (seed 003 FileSnapshot): size, mtime, first 16 hex of SHA-256.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileSnapshot } from '../domain/checkpoint.js';
import { toTimestamp } from '../domain/time.js';

const READ_WHOLE_LIMIT = 8 * 1024 * 1024;

async function sha256Prefix(path: string, size: number): Promise<string> {
  const hash = createHash('sha256');
  if (size <= READ_WHOLE_LIMIT) {
    hash.update(await readFile(path));
  } else {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  }
  return hash.digest('hex').slice(0, 16);
}

export async function snapshotFile(root: string, path: string): Promise<FileSnapshot> {
  const full = join(root, path);
  try {
    const info = await stat(full);
    if (!info.isFile()) return { path, size: info.size, mod_time: toTimestamp(info.mtime), sha256: '', exists: true };
    return { path, size: info.size, mod_time: toTimestamp(info.mtime), sha256: await sha256Prefix(full, info.size), exists: true };
  } catch {
    return { path, size: 0, mod_time: '', sha256: '', exists: false };
  }
}

/** At most `limit` files, so a step that touched thousands of files keeps checkpoints small. */
export async function snapshotFiles(root: string, paths: readonly string[], limit = 200): Promise<FileSnapshot[]> {
  return Promise.all(paths.slice(0, limit).map((p) => snapshotFile(root, p)));
}

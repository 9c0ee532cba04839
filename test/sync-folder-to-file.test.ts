// A folder replaced by a file between versions (issue 36, item 7): an incremental pull refused it
// even with --force. With --force a folder that holds only files the last sync tracked and nobody
// changed since gives way to the stored file; one that holds anything else is still refused.
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { folderStoreWorld, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

async function folderThenFile(extra?: (dest: string) => void) {
  // Each call two hours later: every pull is incremental, never "fresh".
  const w = folderStoreWorld('atlas-folder-to-file-', 7200);
  const src = join(w.base, 'src');
  const dest = join(w.base, 'dest');
  writeTree(src, { 'a/x.txt': 'x', 'a/deeper/y.txt': 'y', 'keep.txt': 'k' });
  await syncPush(w.target(src), await w.deps());
  await syncPull(w.target(dest), await w.deps(), {});
  extra?.(dest);
  rmSync(join(src, 'a'), { recursive: true });
  writeFileSync(join(src, 'a'), 'now a file');
  await syncPush(w.target(src), await w.deps());
  return { w, dest };
}

describe('a folder replaced by a file', () => {
  it('--force replaces a tracked, unchanged folder with the stored file; without it the pull is refused', async () => {
    const { w, dest } = await folderThenFile();
    await expect(syncPull(w.target(dest), await w.deps(), {})).rejects.toThrow(/is a folder here/);
    expect(statSync(join(dest, 'a')).isDirectory()).toBe(true);
    const forced = await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(readFileSync(join(dest, 'a'), 'utf8')).toBe('now a file');
    expect(readFileSync(join(dest, 'keep.txt'), 'utf8')).toBe('k');
    expect(forced.stats.files_deleted).toBe(2);
  });

  it('--force still refuses a folder holding a file the last sync did not bring, and changes nothing', async () => {
    const { w, dest } = await folderThenFile((d) => writeFileSync(join(d, 'a/deeper/mine.txt'), 'mine'));
    await expect(syncPull(w.target(dest), await w.deps(), { force: true })).rejects.toThrow(/is a folder here/);
    expect(readFileSync(join(dest, 'a/deeper/mine.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(join(dest, 'a/x.txt'), 'utf8')).toBe('x');
  });

  it('--force still refuses a folder whose tracked file was changed here', async () => {
    const { w, dest } = await folderThenFile((d) => writeFileSync(join(d, 'a/x.txt'), 'changed here'));
    await expect(syncPull(w.target(dest), await w.deps(), { force: true })).rejects.toThrow(/is a folder here/);
    expect(readFileSync(join(dest, 'a/x.txt'), 'utf8')).toBe('changed here');
  });
});

// Files that change under a push (issue 36): a file removed, or replaced by a symbolic link, after
// the scan and before it is read is left at its previous version (or, new, out of the version),
// named by its path in the push's notes; the rest is published. --strict keeps the refusal,
// naming the file, with nothing published. Before, any such file failed the whole push. The
// change happens at a known point: the store's first call after the scan (findBlobs) makes it.
import { rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { changingAfterScan, configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

async function world() {
  const base = scratch('atlas-changing-');
  const root = join(base, 'ws');
  const config = configWith({ store: join(base, 'store') });
  const target = (at: string): SyncTarget => ({ root: at, tree: 'ws', workspace: 'ws' });
  let clock = 1_700_000_000;
  const deps = async (change?: () => void) => {
    const d = await depsFor(config, join(base, 'home'), () => (clock += 10) * 1000);
    return change ? { ...d, store: changingAfterScan(d.store, change) } : d;
  };
  const newest = async () => {
    const fresh = join(base, `fresh-${clock}`);
    await syncPull(target(fresh), await deps(), {});
    return readTree(fresh);
  };
  return { base, root, target, deps, newest };
}

describe('files that change while a push reads them', () => {
  it('a file gone or made a link is left at its previous version, a new one left out, each named by path', async () => {
    const w = await world();
    writeTree(w.root, { 'keep.txt': 'keep 1', 'gone.txt': 'gone 1', 'link.txt': 'link 1' });
    await syncPush(w.target(w.root), await w.deps());
    writeTree(w.root, { 'keep.txt': 'keep 2', 'gone.txt': 'gone 2', 'link.txt': 'link 2', 'new.txt': 'new' });
    const pushed = await syncPush(
      w.target(w.root),
      await w.deps(() => {
        rmSync(join(w.root, 'gone.txt'));
        rmSync(join(w.root, 'new.txt'));
        rmSync(join(w.root, 'link.txt'));
        symlinkSync('/etc/passwd', join(w.root, 'link.txt'));
      }),
    );
    const note = pushed.stats.notes.join('\n');
    expect(note).toMatch(/3 file\(s\) changed while they were being pushed and were left at their previous version/);
    for (const path of ['gone.txt', 'new.txt', 'link.txt']) expect(note).toContain(path);
    expect(note).not.toMatch(/\.blobs/);
    expect(await w.newest()).toEqual({ 'keep.txt': 'keep 2', 'gone.txt': 'gone 1', 'link.txt': 'link 1' });
    // The next push sees what the folder holds now: gone.txt and new.txt deleted (the link outside is not synced).
    const next = await syncPush(w.target(w.root), await w.deps());
    expect(next.stats.version).not.toBeNull();
    expect(await w.newest()).toEqual({ 'keep.txt': 'keep 2' });
  });

  it('--strict refuses, naming the file by its path, and publishes nothing', async () => {
    const w = await world();
    writeTree(w.root, { 'a.txt': 'a 1', 'b.txt': 'b 1' });
    await syncPush(w.target(w.root), await w.deps());
    writeTree(w.root, { 'a.txt': 'a 2', 'b.txt': 'b 2' });
    const pushed = syncPush(w.target(w.root), await w.deps(() => rmSync(join(w.root, 'b.txt'))), { strict: true });
    await expect(pushed).rejects.toMatchObject({
      exitCode: 1,
      message: expect.stringMatching(/b\.txt is gone: it changed while it was being pushed; nothing was published/),
    });
    expect((await syncVersions(w.target(w.root), await w.deps())).versions).toHaveLength(1);
  });
});

describe('a store path that is a file', () => {
  it('is refused with exit 2, naming it, before anything is scanned or written', async () => {
    const base = scratch('atlas-store-file-');
    const store = join(base, 'store');
    writeTree(base, { store: 'not a folder', 'ws/a.txt': 'a' });
    const deps = await depsFor(configWith({ store }), join(base, 'home'));
    const target: SyncTarget = { root: join(base, 'ws'), tree: 'ws', workspace: 'ws' };
    for (const run of [() => syncPush(target, deps), () => syncPull(target, deps, {}), () => syncVersions(target, deps)]) {
      await expect(run()).rejects.toMatchObject({ exitCode: 2, message: `sync.store ${store} is a file, not a folder` });
    }
  });
});

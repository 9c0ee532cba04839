// A symbolic link naming a place inside the workspace by absolute path (issue 36, rsync -a
// fidelity) was dropped as "pointing outside". It is kept relative to the workspace, so it names
// the same file in every copy; a link pointing outside by absolute path is still left out. A
// link's own mtime was lost (the pull's time): it comes back, as with rsync -a.
import { lstatSync, lutimesSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncStatus } from '../src/sync/operations.js';
import { folderStoreWorld, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

describe('links by absolute path, and their times', () => {
  it('one inside the workspace comes back relative to it; one outside is left out', async () => {
    const { base, target, deps } = folderStoreWorld('atlas-abs-links-', 7200);
    const src = join(base, 'src');
    writeTree(src, { 'a.txt': 'a', 'sub/b.txt': 'b', 'deep/x/keep.txt': 'k' });
    symlinkSync(join(src, 'a.txt'), join(src, 'top-link'));
    symlinkSync(join(src, 'sub'), join(src, 'deep/x/to-sub'));
    symlinkSync(join(src, 'sub/b.txt'), join(src, 'sub/self-b'));
    symlinkSync(join(base, 'elsewhere.txt'), join(src, 'outside'));
    lutimesSync(join(src, 'top-link'), 1_600_000_000, 1_600_000_000);
    const pushed = await syncPush(target(src), await deps());
    expect(pushed.stats.notes.join('\n')).toContain('outside');

    const dest = join(base, 'dest');
    await syncPull(target(dest), await deps(), {});
    expect(readlinkSync(join(dest, 'top-link'))).toBe('a.txt');
    expect(readlinkSync(join(dest, 'deep/x/to-sub'))).toBe('../../sub');
    expect(readlinkSync(join(dest, 'sub/self-b'))).toBe('b.txt');
    expect(readFileSync(join(dest, 'deep/x/to-sub/b.txt'), 'utf8')).toBe('b');
    expect(() => readlinkSync(join(dest, 'outside'))).toThrow(/ENOENT/);
    // A link's own time comes back too (its target's is the file's).
    expect(Math.floor(lstatSync(join(dest, 'top-link')).mtimeMs / 1000)).toBe(1_600_000_000);

    // The absolute links here are the version's links: nothing to push, nothing to pull.
    const status = await syncStatus(target(src), await deps());
    expect(status.push.new_version).toBe(false);
    expect(status.push.upload).toBe(0);
    expect(status.pull.conflicts).toEqual([]);
  });
});

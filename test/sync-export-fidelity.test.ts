// `atlas sync export` into a folder keeps what a pull keeps (issue 36, rsync -a fidelity): folder
// modes, folder and link times, links by absolute path inside the workspace (relative to it), and
// hard links. Before, an export gave every folder the umask's mode and the export's time, and hard
// links came out as separate files.
import { chmodSync, linkSync, lstatSync, lutimesSync, readlinkSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPush } from '../src/sync/operations.js';
import { syncExport } from '../src/sync/transfer/export.js';
import { folderStoreWorld, readTree, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

describe('export into a folder', () => {
  it('restores folder modes and times, link times, links inside by absolute path and hard links, as a pull does', async () => {
    const { base, target, deps } = folderStoreWorld('atlas-export-fidelity-', 7200);
    const src = join(base, 'src');
    writeTree(src, { 'a.txt': 'shared', 'private/secret.txt': 's', 'ro/r.txt': 'r', 'deep/x/y.txt': 'y' });
    linkSync(join(src, 'a.txt'), join(src, 'deep/a-again.txt'));
    symlinkSync(join(src, 'private/secret.txt'), join(src, 'abs-link'));
    lutimesSync(join(src, 'abs-link'), 1_600_000_100, 1_600_000_100);
    chmodSync(join(src, 'private'), 0o700);
    utimesSync(join(src, 'deep/x'), 1_600_000_000, 1_600_000_000);
    utimesSync(join(src, 'private'), 1_600_000_200, 1_600_000_200);
    chmodSync(join(src, 'ro'), 0o555);
    await syncPush(target(src), await deps());
    chmodSync(join(src, 'ro'), 0o755);

    const out = join(base, 'out');
    await syncExport(target(src), await deps(), { dest: out });
    expect(readTree(out)).toMatchObject({ 'a.txt': 'shared', 'private/secret.txt': 's', 'deep/a-again.txt': 'shared' });
    expect(statSync(join(out, 'private')).mode & 0o777).toBe(0o700);
    expect(statSync(join(out, 'ro')).mode & 0o777).toBe(0o555);
    expect(statSync(join(out, 'deep/x')).mtimeMs).toBe(1_600_000_000_000);
    expect(statSync(join(out, 'private')).mtimeMs).toBe(1_600_000_200_000);
    expect(readlinkSync(join(out, 'abs-link'))).toBe('private/secret.txt');
    expect(lstatSync(join(out, 'abs-link')).mtimeMs).toBe(1_600_000_100_000);
    expect(statSync(join(out, 'deep/a-again.txt')).ino).toBe(statSync(join(out, 'a.txt')).ino);
    chmodSync(join(out, 'ro'), 0o755);
  });
});

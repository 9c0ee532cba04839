// Hard links (issue 36, rsync -a fidelity): two names of one file came back as two files. A
// version records the groups (`hardlinks`), the content is stored once, and a pull links the
// names again; a group whose names differ in content (a hostile manifest) is left as files.
import { linkSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { folderStoreWorld, removeScratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

describe('hard links', () => {
  it('come back as one file under several names; a group of different contents is refused as links', async () => {
    const { base, store, target, deps } = folderStoreWorld('atlas-hardlinks-', 7200);
    const src = join(base, 'src');
    writeTree(src, { 'a.txt': 'shared body', 'other.txt': 'other', 'd/x.txt': 'x' });
    linkSync(join(src, 'a.txt'), join(src, 'd/a-again.txt'));
    linkSync(join(src, 'a.txt'), join(src, 'z.txt'));
    await syncPush(target(src), await deps());

    const dest = join(base, 'dest');
    await syncPull(target(dest), await deps(), {});
    const ino = (p: string) => statSync(join(dest, p)).ino;
    expect(ino('d/a-again.txt')).toBe(ino('a.txt'));
    expect(ino('z.txt')).toBe(ino('a.txt'));
    expect(statSync(join(dest, 'a.txt')).nlink).toBe(3);
    expect(ino('other.txt')).not.toBe(ino('a.txt'));
    expect(readFileSync(join(dest, 'z.txt'), 'utf8')).toBe('shared body');

    // A manifest grouping names of different contents: each stays a file of its own.
    const [version] = readdirSync(join(store, 'ws')).filter((n) => /^\d+$/.test(n));
    const manifest = join(store, 'ws', version!, '.sandbox-state');
    const state = JSON.parse(readFileSync(manifest, 'utf8'));
    expect(state.hardlinks).toEqual([['a.txt', 'd/a-again.txt', 'z.txt']]);
    writeFileSync(manifest, JSON.stringify({ ...state, hardlinks: [['a.txt', 'other.txt']] }));
    const hostile = join(base, 'hostile');
    await syncPull(target(hostile), await deps(), {});
    expect(readFileSync(join(hostile, 'other.txt'), 'utf8')).toBe('other');
    expect(statSync(join(hostile, 'other.txt')).ino).not.toBe(statSync(join(hostile, 'a.txt')).ino);
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[],"hardlinks":[["a"]]}')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/"hardlinks" is not a list of groups/),
    });
  });
});

// A pull's look at the folder (observePaths in src/sync/scan/safe-fs.ts), on a real folder: a file
// as the last sync left it answers with the last sync's checksum without being read again, one
// whose bits or content changed answers with what is there, and every path is found whether the
// plan asks in order or not, and whether the paths came in path order or not.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FileEntry, StateFile } from '../src/domain/sync-state.js';
import { emptyState } from '../src/domain/sync-state.js';
import { observePaths } from '../src/sync/scan/safe-fs.js';
import { removeScratch, scratch } from './helpers/sync-fixtures.js';

afterAll(removeScratch);

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
/** A checksum no content has: seen again only when it was taken from the last state, not read. */
const REMEMBERED = 'f'.repeat(32);

function folder() {
  const root = scratch();
  mkdirSync(join(root, 'd'));
  for (const [path, text] of [
    ['a.txt', 'alpha'],
    ['d/b.txt', 'beta'],
    ['d/mode.txt', 'mode'],
    ['grown.txt', 'grown'],
    ['file', 'a file'],
  ] as const)
    writeFileSync(join(root, path), text);
  symlinkSync('a.txt', join(root, 'link'));
  mkdirSync(join(root, 'folder'));
  const entry = (path: string): FileEntry => {
    const st = statSync(join(root, path));
    return { path, checksum: REMEMBERED, size: st.size, modified_at: Math.floor(st.mtimeMs / 1000), mode: st.mode & 0o777 };
  };
  const previous: StateFile = {
    ...emptyState(),
    last_synced_at: Math.floor(Date.now() / 1000) + 60,
    files: ['a.txt', 'd/b.txt', 'd/mode.txt', 'grown.txt'].map(entry),
  };
  chmodSync(join(root, 'd/mode.txt'), 0o600);
  writeFileSync(join(root, 'grown.txt'), 'grown longer');
  return { root, previous };
}

const PATHS = ['a.txt', 'd/b.txt', 'd/mode.txt', 'file/under', 'folder', 'gone.txt', 'grown.txt', 'link'];

describe('observePaths', () => {
  it('answers from the last state what cannot have changed, and reads the rest', async () => {
    const { root, previous } = folder();
    const observe = await observePaths(root, PATHS, previous);
    expect(observe('a.txt')).toEqual({
      kind: 'file',
      checksum: REMEMBERED,
      size: 5,
      modified_at: previous.files[0]!.modified_at,
      mode: previous.files[0]!.mode,
    });
    expect(observe('d/b.txt')).toMatchObject({ kind: 'file', checksum: REMEMBERED });
    // New bits, same content and time: the remembered checksum, the bits that are there.
    expect(observe('d/mode.txt')).toMatchObject({ kind: 'file', checksum: REMEMBERED, mode: 0o600 });
    expect(observe('grown.txt')).toMatchObject({ kind: 'file', checksum: md5('grown longer'), size: 12 });
    expect(observe('file/under')).toMatchObject({ kind: 'blocked' });
    expect(observe('folder')).toEqual({ kind: 'dir' });
    expect(observe('gone.txt')).toEqual({ kind: 'missing' });
    expect(observe('link')).toMatchObject({ kind: 'symlink' });
    // A path it was not asked about is missing too.
    expect(observe('never-asked')).toEqual({ kind: 'missing' });
  });

  it('finds every path asked out of order, and paths given out of order', async () => {
    const { root, previous } = folder();
    const inOrder = await observePaths(root, PATHS, previous);
    const expected = PATHS.map((p) => inOrder(p));
    const backwards = await observePaths(root, PATHS, previous);
    expect([...PATHS].reverse().map((p) => backwards(p))).toEqual([...expected].reverse());
    const shuffled = [...PATHS].reverse();
    const unordered = await observePaths(root, shuffled, previous);
    expect(PATHS.map((p) => unordered(p))).toEqual(expected);
    expect(unordered('never-asked')).toEqual({ kind: 'missing' });
  });

  it('reads every file when the last sync is not over (a pull cut off)', async () => {
    const { root, previous } = folder();
    const observe = await observePaths(root, PATHS, { ...previous, last_synced_at: 0 });
    expect(observe('a.txt')).toMatchObject({ checksum: md5('alpha') });
  });

  it('answers missing for every path of an empty folder', async () => {
    const observe = await observePaths(scratch(), PATHS, undefined);
    for (const path of [...PATHS, 'never/asked']) expect(observe(path)).toEqual({ kind: 'missing' });
  });
});

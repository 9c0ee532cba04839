// A pull's writes (src/sync/scan/safe-fs.ts writeVerified, src/sync/scan/stream-file.ts): the cases a plan
// cannot see because they appear between the plan and the write, on real files.
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { FileEntry } from '../src/domain/sync-state.js';
import { ensureParents, writeVerified } from '../src/sync/scan/safe-fs.js';
import { streamToNewFile } from '../src/sync/scan/stream-file.js';
import { removeScratch, scratch } from './helpers/sync-fixtures.js';

afterAll(() => {
  removeScratch();
});

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const entryOf = (path: string, text: string): FileEntry => ({
  path,
  checksum: md5(text),
  size: Buffer.byteLength(text),
  modified_at: 1_700_000_000,
});
const fetchText = (text: string) => (temp: string) => streamToNewFile(Readable.from([Buffer.from(text)]), temp);

describe('writeVerified', () => {
  it('writes through folders it makes once, with the stored mtime', async () => {
    const root = scratch();
    const folders = new Map<string, Promise<void>>();
    await Promise.all(
      ['a/b/one.txt', 'a/b/two.txt', 'a/three.txt'].map((p) => writeVerified(root, entryOf(p, p), fetchText(p), p, folders)),
    );
    expect([...folders.keys()].sort()).toEqual(['.sandbox-state.tmp', 'a', 'a/b']);
    expect(readdirSync(join(root, '.sandbox-state.tmp'))).toEqual([]);
    expect(readFileSync(join(root, 'a/b/two.txt'), 'utf8')).toBe('a/b/two.txt');
    expect(lstatSync(join(root, 'a/three.txt')).mtimeMs).toBe(1_700_000_000_000);
  });

  it('refuses a folder that appeared where the file goes, and leaves no temp file', async () => {
    const root = scratch();
    mkdirSync(join(root, 'x', 'inner'), { recursive: true });
    await expect(writeVerified(root, entryOf('x', 'data'), fetchText('data'), 'x')).rejects.toThrow(
      /refused to write x: it is a folder here/,
    );
    expect(readdirSync(root)).toEqual(['.sandbox-state.tmp', 'x']);
    expect(readdirSync(join(root, '.sandbox-state.tmp'))).toEqual([]);
    expect(readdirSync(join(root, 'x'))).toEqual(['inner']);
  });

  it('refuses a file or a symlink on the way', async () => {
    const root = scratch();
    writeFileSync(join(root, 'file'), 'mine');
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'link'));
    await expect(writeVerified(root, entryOf('file/a.txt', 'a'), fetchText('a'), 'a')).rejects.toThrow(
      /refused to write into file: it is not a plain folder here/,
    );
    await expect(ensureParents(root, 'link/deeper/b.txt')).rejects.toThrow(/refused to write into link/);
    expect(readdirSync(join(root, 'real'))).toEqual([]);
    expect(readFileSync(join(root, 'file'), 'utf8')).toBe('mine');
  });

  it('keeps the old file when the bytes do not match, and removes the temp file', async () => {
    const root = scratch();
    writeFileSync(join(root, 'f.txt'), 'old');
    await expect(writeVerified(root, entryOf('f.txt', 'expected'), fetchText('tampered'), 'f.txt in v1')).rejects.toThrow(
      /f\.txt in v1 does not match its \.sandbox-state/,
    );
    expect(readdirSync(root)).toEqual(['.sandbox-state.tmp', 'f.txt']);
    expect(readdirSync(join(root, '.sandbox-state.tmp'))).toEqual([]);
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toBe('old');
  });
});

describe('streamToNewFile', () => {
  it('never writes over an existing file', async () => {
    const root = scratch();
    writeFileSync(join(root, 'taken'), 'mine');
    await expect(streamToNewFile(Readable.from([Buffer.from('x')]), join(root, 'taken'))).rejects.toMatchObject({ code: 'EEXIST' });
    expect(readFileSync(join(root, 'taken'), 'utf8')).toBe('mine');
  });

  it('counts and hashes every chunk, strings too, and fails with the stream', async () => {
    const root = scratch();
    expect(await streamToNewFile(Readable.from(['ab', Buffer.from('cd')]), join(root, 'ok'))).toEqual({
      bytes: 4,
      md5: md5('abcd'),
      sha256: createHash('sha256').update('abcd').digest('hex'),
    });
    const broken = new Readable({
      read() {
        this.push(Buffer.from('part'));
        this.destroy(new Error('connection lost'));
      },
    });
    await expect(streamToNewFile(broken, join(root, 'broken'))).rejects.toThrow(/connection lost/);
  });
});

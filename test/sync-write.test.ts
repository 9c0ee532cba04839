// A pull's writes (src/sync/scan/safe-fs.ts stageVerified, src/sync/transfer/staging.ts, src/sync/scan/stream-file.ts): the cases a plan
// cannot see because they appear between the plan and the write, on real files.
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { FileEntry } from '../src/domain/sync-state.js';
import { ensureParents, stageVerified } from '../src/sync/scan/safe-fs.js';
import { streamBlobToNewFile, streamToNewFile } from '../src/sync/scan/stream-file.js';
import { staged } from '../src/sync/transfer/staging.js';
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

/** Stages `entries` (each holding `text`, fetched as `fetched(path)`) and commits them. */
const stageAll = (root: string, entries: FileEntry[], fetched: (path: string) => string = (p) => p) =>
  staged(root, entries, (stage) =>
    Promise.all(entries.map((e) => stageVerified(root, e, fetchText(fetched(e.path)), `${e.path} in v1`, stage))),
  );

describe('stageVerified', () => {
  it('writes through folders it makes once, with the stored mtime, and leaves no temp file', async () => {
    const root = scratch();
    await stageAll(
      root,
      ['a/b/one.txt', 'a/b/two.txt', 'a/three.txt'].map((p) => entryOf(p, p)),
    );
    expect(readdirSync(root)).toEqual(['a']);
    expect(readdirSync(join(root, 'a')).sort()).toEqual(['b', 'three.txt']);
    expect(readFileSync(join(root, 'a/b/two.txt'), 'utf8')).toBe('a/b/two.txt');
    expect(lstatSync(join(root, 'a/three.txt')).mtimeMs).toBe(1_700_000_000_000);
  });

  it('refuses a folder that appeared where the file goes, and leaves no temp file', async () => {
    const root = scratch();
    mkdirSync(join(root, 'x', 'inner'), { recursive: true });
    await expect(stageAll(root, [entryOf('x', 'x')])).rejects.toThrow(/refused to write x: it is a folder here/);
    expect(readdirSync(root)).toEqual(['x']);
    expect(readdirSync(join(root, 'x'))).toEqual(['inner']);
  });

  it('refuses a file or a symlink on the way', async () => {
    const root = scratch();
    writeFileSync(join(root, 'file'), 'mine');
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'link'));
    await expect(stageAll(root, [entryOf('file/a.txt', 'file/a.txt')])).rejects.toThrow(
      /refused to write into file: it is not a plain folder here/,
    );
    await expect(ensureParents(root, 'link/deeper/b.txt')).rejects.toThrow(/refused to write into link/);
    expect(readdirSync(join(root, 'real'))).toEqual([]);
    expect(readFileSync(join(root, 'file'), 'utf8')).toBe('mine');
  });

  it('keeps every old file when one content does not match: nothing is renamed, temp files and new folders go', async () => {
    const root = scratch();
    writeFileSync(join(root, 'f.txt'), 'old');
    const entries = [entryOf('f.txt', 'f.txt'), entryOf('new/deep/g.txt', 'expected')];
    await expect(stageAll(root, entries, (p) => (p === 'f.txt' ? p : 'tampered'))).rejects.toThrow(
      /new\/deep\/g\.txt in v1 does not match its \.sandbox-state/,
    );
    expect(readdirSync(root)).toEqual(['f.txt']);
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toBe('old');
  });

  it('with nothing to stage, leaves the folder untouched (it may be read-only)', async () => {
    const root = scratch();
    chmodSync(root, 0o555);
    utimesSync(root, 1_600_000_000, 1_600_000_000);
    try {
      await expect(staged(root, [], async () => 'done')).resolves.toBe('done');
      // Not even a temp folder made and removed (root may write a 0555 folder: its time tells).
      expect(lstatSync(root).mtimeMs).toBe(1_600_000_000_000);
    } finally {
      chmodSync(root, 0o755);
    }
  });

  it('a rename refused midway leaves none of the later temp files; a temp it did not hand out is refused', async () => {
    const root = scratch();
    const entries = ['a.txt', 'b.txt', 'c.txt'].map((p) => entryOf(p, p));
    await expect(
      staged(
        root,
        entries,
        async (stage) => {
          for (const e of entries) await stageVerified(root, e, fetchText(e.path), `${e.path} in v1`, stage);
          expect(() => stage.add(join(root, '.sandbox-state.tmp.1-1'), 'a.txt')).toThrow(/was not made by this pull for a\.txt/);
        },
        async () => void mkdirSync(join(root, 'b.txt', 'inside'), { recursive: true }),
      ),
    ).rejects.toThrow(/refused to write b\.txt: it is a folder here/);
    expect(readdirSync(root).sort()).toEqual(['a.txt', 'b.txt']);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('a.txt');
  });

  it('stages more files than it was told of (its lists grow), and renames or removes every one', async () => {
    const root = scratch();
    const many = Array.from({ length: 40 }, (_, i) => entryOf(`f${String(i).padStart(2, '0')}.txt`, `body ${i}`));
    // Told of one, given forty: every one renamed into place.
    await staged(root, many.slice(0, 1), (stage) =>
      Promise.all(many.map((e, i) => stageVerified(root, e, fetchText(`body ${i}`), `${e.path} in v1`, stage))),
    );
    expect(readdirSync(root).sort()).toEqual(many.map((e) => e.path));
    expect(readFileSync(join(root, 'f39.txt'), 'utf8')).toBe('body 39');
    // Told of none, given forty, then a failure before the renames: none of their temp files stays.
    const other = scratch();
    await expect(
      staged(other, [], async (stage) => {
        for (const [i, e] of many.entries()) await stageVerified(other, e, fetchText(`body ${i}`), `${e.path} in v1`, stage);
        throw new Error('the connection dropped');
      }),
    ).rejects.toThrow('the connection dropped');
    expect(readdirSync(other)).toEqual([]);
  });

  it('removes the temp files a killed pull left in the folders it wrote down, and only those', async () => {
    const root = scratch();
    mkdirSync(join(root, 'a', '.sandbox-state.tmp'), { recursive: true });
    writeFileSync(join(root, 'a', '.sandbox-state.tmp.123-4'), 'left by a killed pull');
    writeFileSync(join(root, 'a', '.sandbox-state.tmp.mine'), "the person's");
    mkdirSync(join(root, '.sandbox-state.tmp'));
    writeFileSync(join(root, '.sandbox-state.tmp', 'staged-in'), 'a\n../outside\nlink');
    symlinkSync(join(root, 'a'), join(root, 'link'));
    await stageAll(root, [entryOf('b.txt', 'b.txt')]);
    expect(readdirSync(join(root, 'a')).sort()).toEqual(['.sandbox-state.tmp', '.sandbox-state.tmp.mine']);
    expect(readdirSync(root).sort()).toEqual(['a', 'b.txt', 'link']);
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

  it('hashes a file of no piece, of one and of three the same as the bytes written', async () => {
    const root = scratch();
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    for (const [name, pieces] of [
      ['none', []],
      ['one', ['single piece']],
      ['three', ['fir', 'st ', 'three']],
    ] as const) {
      const got = await streamToNewFile(Readable.from(pieces.map((p) => Buffer.from(p))), join(root, name));
      const text = pieces.join('');
      expect(got).toEqual({ bytes: text.length, md5: md5(text), sha256: sha256(text) });
      expect(readFileSync(join(root, name), 'utf8')).toBe(text);
      // A blob is checked by its SHA-256: no MD5 is computed for it.
      const blob = await streamBlobToNewFile(Readable.from(pieces.map((p) => Buffer.from(p))), join(root, `${name}.blob`));
      expect(blob).toEqual({ bytes: text.length, sha256: sha256(text) });
      expect(readFileSync(join(root, `${name}.blob`), 'utf8')).toBe(text);
    }
    await expect(streamBlobToNewFile(Readable.from([Buffer.from('x')]), join(root, 'one'))).rejects.toMatchObject({ code: 'EEXIST' });
  });
});

describe('what a content is checked by', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const blobOf = (temp: string, text: string) => streamBlobToNewFile(Readable.from([Buffer.from(text)]), temp);
  const check = (root: string, entry: FileEntry, text: string) =>
    staged(root, [entry], (stage) => stageVerified(root, entry, (temp) => blobOf(temp, text), `${entry.path} in v1`, stage));

  it('a content with a SHA-256 by it and its size, the hash checked named in the refusal', async () => {
    const root = scratch();
    const entry = { ...entryOf('a.txt', 'right'), sha256: sha256('right') };
    await expect(check(root, entry, 'wrong')).rejects.toThrow(
      `a.txt in v1 does not match its .sandbox-state (SHA-256 ${sha256('wrong')}, 5 bytes; expected ${sha256('right')}, 5 bytes)`,
    );
    await expect(check(root, { ...entry, size: 6 }, 'right')).rejects.toThrow(/5 bytes; expected .*, 6 bytes/);
    expect(readdirSync(root)).toEqual([]);
    await check(root, entry, 'right');
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('right');
  });

  it('a content stored before content addressing (no SHA-256) by its MD5, which a blob writer does not give', async () => {
    const root = scratch();
    await expect(check(root, entryOf('old.txt', 'text'), 'text')).rejects.toThrow(
      /old\.txt in v1 does not match its \.sandbox-state \(MD5 not computed, 4 bytes; expected [0-9a-f]{32}, 4 bytes\)/,
    );
    await expect(stageAll(root, [entryOf('old.txt', 'text')], () => 'TEXT')).rejects.toThrow(
      `old.txt in v1 does not match its .sandbox-state (MD5 ${md5('TEXT')}, 4 bytes; expected ${md5('text')}, 4 bytes)`,
    );
    await stageAll(root, [entryOf('old.txt', 'old.txt')]);
    expect(readdirSync(root)).toEqual(['old.txt']);
  });
});

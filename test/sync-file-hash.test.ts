// Hashing a file from one read: whole into a reused buffer when it fits, as a stream otherwise,
// and as a stream when it grew past what its stat said.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashFile, md5File } from '../src/sync/scan/file-hash.js';

const dir = mkdtempSync(join(tmpdir(), 'atlas-file-hash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const expected = (bytes: Buffer) => ({
  md5: createHash('md5').update(bytes).digest('hex'),
  sha256: createHash('sha256').update(bytes).digest('hex'),
  bytes: bytes.length,
});

function file(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('hashFile and md5File', () => {
  it('hash empty, small, buffer-sized, just larger and large files, with and without their size', async () => {
    for (const size of [0, 10, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024 + 7]) {
      const bytes = Buffer.alloc(size, size % 251);
      for (let i = 0; i < size; i += 4093) bytes[i] = i % 256;
      const path = file(`f${size}`, bytes);
      expect(await hashFile(path, size), `${size} bytes`).toEqual(expected(bytes));
      expect(await hashFile(path), `${size} bytes, no size`).toEqual(expected(bytes));
      expect(await md5File(path, size)).toBe(expected(bytes).md5);
      expect(await md5File(path)).toBe(expected(bytes).md5);
    }
  });

  it('a file larger than its stated size (it grew since the stat) is hashed whole, past the buffer too', async () => {
    const grown = Buffer.alloc(300 * 1024, 7);
    const path = file('grown', grown);
    expect(await hashFile(path, 10)).toEqual(expected(grown));
    expect(await md5File(path, 10)).toBe(expected(grown).md5);
    // Exactly the buffer, then one byte more: the byte past the buffer is seen.
    const edge = Buffer.alloc(256 * 1024 + 1, 9);
    expect(await hashFile(file('edge', edge), 256 * 1024)).toEqual(expected(edge));
  });

  it('readings at once each hash their own file (the reused buffers are never shared)', async () => {
    const files = Array.from({ length: 40 }, (_, i) => Buffer.alloc(1000 + i * 97, i));
    const paths = files.map((bytes, i) => file(`many${i}`, bytes));
    const got = await Promise.all(paths.map((p, i) => hashFile(p, files[i]!.length)));
    expect(got).toEqual(files.map(expected));
  });

  it('a missing file fails with its error', async () => {
    await expect(hashFile(join(dir, 'nothing'), 3)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(md5File(join(dir, 'nothing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

// Nothing a store says is written outside the workspace (issue 10 item 7): hostile state files,
// symlinks and files in the way, tampered objects. Every case checks the whole folder around the
// workspace, byte for byte and mtime for mtime: 0 writes outside.
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull } from '../src/sync/operations.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => {
  removeScratch();
});

/** Every entry under `root` except `skip`, with type, content or link target, and mtime. */
function snapshot(root: string, skip: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (path === skip) continue;
      const st = lstatSync(path);
      if (st.isSymbolicLink()) out[path] = `link ${readlinkSync(path)} ${st.mtimeMs}`;
      else if (st.isDirectory()) {
        out[path] = `dir ${st.mtimeMs}`;
        walk(path);
      } else out[path] = `file ${readFileSync(path, 'base64')} ${st.mtimeMs}`;
    }
  };
  walk(root);
  return out;
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

function world() {
  const parent = scratch('atlas-hostile-');
  const ws = join(parent, 'ws');
  const store = join(parent, 'store');
  writeTree(parent, { 'outside/keep.txt': 'precious', 'ws/existing.txt': 'existing' });
  /** A version in the store whose state lists `files` (content given, or a wrong checksum). */
  const version = (name: string, files: { path: string; content?: string; checksum?: string }[]) => {
    const root = join(store, 'ws', name);
    mkdirSync(root, { recursive: true });
    const entries = files.map((f) => ({
      path: f.path,
      checksum: f.checksum ?? md5(f.content ?? ''),
      size: Buffer.byteLength(f.content ?? ''),
      modified_at: 1,
    }));
    writeTree(root, { '.sandbox-state': JSON.stringify({ version: '1.0', last_synced_at: 2, files: entries }) });
    for (const f of files) {
      if (f.content !== undefined && !f.path.includes('..') && !f.path.startsWith('/') && !f.path.includes('\0')) {
        try {
          writeTree(root, { [f.path]: f.content });
        } catch {
          // clashing paths cannot all exist in the store either
        }
      }
    }
  };
  const pull = async (force = false) =>
    syncPull({ root: ws, tree: 'ws', workspace: 'ws' }, await depsFor(configWith({ store }), parent), force ? { force } : {});
  return { parent, ws, store, version, pull };
}

describe('hostile store input', () => {
  const cases: [string, (w: ReturnType<typeof world>) => { path: string; content?: string }[], RegExp][] = [
    ['a .. segment', () => [{ path: '../outside/evil.txt', content: 'x' }], /"\.\.\/outside\/evil.txt" has a "\.\." segment/],
    ['an absolute path', (w) => [{ path: join(w.parent, 'outside', 'abs.txt'), content: 'x' }], /is absolute/],
    ['backslashes', () => [{ path: 'a\\..\\..\\outside\\evil.txt', content: 'x' }], /contains a backslash/],
    ['a NUL byte', () => [{ path: 'a\0b', content: 'x' }], /contains a NUL byte/],
    ['a .git path', () => [{ path: '.git/hooks/pre-commit', content: '#!/bin/sh\n' }], /names \.git/],
    [
      'a file where a folder should be, in the state',
      () => [
        { path: 'x', content: 'x' },
        { path: 'x/y', content: 'y' },
      ],
      /needs x to be a folder/,
    ],
  ];
  for (const [name, files, message] of cases) {
    it(`refuses ${name} and writes nothing anywhere`, async () => {
      const w = world();
      w.version('100', [{ path: 'fine.txt', content: 'ok' }, ...files(w)]);
      const before = snapshot(w.parent, w.ws);
      await expect(w.pull(true)).rejects.toThrow(message);
      expect(snapshot(w.parent, w.ws)).toEqual(before);
      expect(readTree(w.ws, { all: true })).toEqual({ 'existing.txt': 'existing' });
    });
  }

  it('refuses to write through a symlink in the workspace that points out of it', async () => {
    const w = world();
    symlinkSync(join(w.parent, 'outside'), join(w.ws, 'link'));
    w.version('100', [
      { path: 'link/evil.txt', content: 'x' },
      { path: 'link/keep.txt', content: 'overwritten?' },
    ]);
    const before = snapshot(w.parent, w.ws);
    await expect(w.pull(true)).rejects.toThrow(/link is a symlink here \(writing through it could leave the workspace\)/);
    expect(snapshot(w.parent, w.ws)).toEqual(before);
    expect(readTree(w.ws)).toEqual({ 'existing.txt': 'existing', link: expect.stringMatching(/^->/) });
  });

  it('replaces a symlink file with the stored file (with --force), never writing through it', async () => {
    const w = world();
    symlinkSync(join(w.parent, 'outside', 'keep.txt'), join(w.ws, 'doc.txt'));
    w.version('100', [{ path: 'doc.txt', content: 'stored' }]);
    const before = snapshot(w.parent, w.ws);
    await expect(w.pull()).rejects.toThrow(/"doc.txt" is a symlink here/);
    await w.pull(true);
    expect(snapshot(w.parent, w.ws)).toEqual(before);
    expect(lstatSync(join(w.ws, 'doc.txt')).isFile()).toBe(true);
    expect(readFileSync(join(w.ws, 'doc.txt'), 'utf8')).toBe('stored');
  });

  it('refuses a file here where the store needs a folder, and a folder where it has a file', async () => {
    const w = world();
    writeTree(w.ws, { notadir: 'file', 'adir/inner.txt': 'i' });
    w.version('100', [
      { path: 'notadir/x.txt', content: 'x' },
      { path: 'adir', content: 'file now' },
    ]);
    const before = snapshot(w.parent, w.ws);
    const inside = readTree(w.ws, { all: true });
    const error = await w.pull(true).catch((e: Error) => e);
    expect(String(error)).toMatch(/notadir is a file here, where a folder should be/);
    expect(String(error)).toMatch(/"adir" is a folder here/);
    expect(snapshot(w.parent, w.ws)).toEqual(before);
    expect(readTree(w.ws, { all: true })).toEqual(inside);
  });

  it('a stored object that does not match its MD5 is not written; deletions do not happen', async () => {
    const w = world();
    w.version('100', [
      { path: 'existing.txt', content: 'existing' },
      { path: 'a.txt', content: 'real' },
    ]);
    await w.pull(true);
    writeTree(w.store, {
      'ws/101/.sandbox-state': JSON.stringify({
        version: '1.0',
        last_synced_at: 3,
        files: [{ path: 'a.txt', checksum: md5('other'), size: 5, modified_at: 1 }],
      }),
      'ws/101/a.txt': 'TAMPR',
    });
    await expect(w.pull(true)).rejects.toThrow(/a.txt in version 101 of ws .* does not match its \.sandbox-state/);
    expect(readTree(w.ws)).toEqual({ 'existing.txt': 'existing', 'a.txt': 'real' });
    expect(readdirSync(w.ws).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

// A folder store's symbolic links are refused, never followed (issue 18, attack 8): a file of the
// pulling machine whose MD5 and size are known must not be copied into a workspace through a link
// in the store, nor a state file read through one, nor a version written through one.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { configWith, depsFor, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

function world() {
  const parent = scratch('atlas-store-links-');
  const ws = join(parent, 'ws');
  const store = join(parent, 'store');
  // A secret of the pulling machine, whose MD5 and size an attacker knows.
  writeTree(parent, { 'secret/id_key': 'SECRET-KEY', 'ws/.keep': '' });
  const state = (files: { path: string; content: string }[]) =>
    JSON.stringify({
      version: '1.0',
      last_synced_at: 2,
      files: files.map((f) => ({ path: f.path, checksum: md5(f.content), size: Buffer.byteLength(f.content), modified_at: 1 })),
    });
  const deps = async () => depsFor(configWith({ store }), parent);
  const pull = async () => syncPull({ root: ws, tree: 'ws', workspace: 'ws' }, await deps(), { force: true });
  return { parent, ws, store, state, deps, pull };
}

describe('symbolic links in a folder store', () => {
  it('a stored file that is a link to a file of this machine: refused, nothing copied', async () => {
    const w = world();
    const version = join(w.store, 'ws', '100');
    mkdirSync(version, { recursive: true });
    writeFileSync(join(version, '.sandbox-state'), w.state([{ path: 'loot.txt', content: 'SECRET-KEY' }]));
    symlinkSync(join(w.parent, 'secret', 'id_key'), join(version, 'loot.txt'));
    await expect(w.pull()).rejects.toThrow(/symbolic link at .*loot\.txt; atlas never follows links inside a store/);
    expect(existsSync(join(w.ws, 'loot.txt'))).toBe(false);
  });

  it('a linked folder on the way (the version, a subfolder, the tree): refused', async () => {
    for (const linkAt of ['version', 'subfolder', 'tree'] as const) {
      const w = world();
      const elsewhere = join(w.parent, 'elsewhere');
      writeTree(elsewhere, { 'sub/a.txt': 'A', '.sandbox-state': w.state([{ path: 'sub/a.txt', content: 'A' }]) });
      if (linkAt === 'version') {
        mkdirSync(join(w.store, 'ws'), { recursive: true });
        symlinkSync(elsewhere, join(w.store, 'ws', '100'));
      } else if (linkAt === 'tree') {
        mkdirSync(join(elsewhere, '100'), { recursive: true });
        writeTree(join(elsewhere, '100'), { 'sub/a.txt': 'A', '.sandbox-state': w.state([{ path: 'sub/a.txt', content: 'A' }]) });
        mkdirSync(w.store, { recursive: true });
        symlinkSync(elsewhere, join(w.store, 'ws'));
      } else {
        writeTree(join(w.store, 'ws', '100'), { '.sandbox-state': w.state([{ path: 'sub/a.txt', content: 'A' }]) });
        symlinkSync(join(elsewhere, 'sub'), join(w.store, 'ws', '100', 'sub'));
      }
      await expect(w.pull(), linkAt).rejects.toThrow(/symbolic link at/);
      expect(existsSync(join(w.ws, 'sub', 'a.txt')), linkAt).toBe(false);
    }
  });

  it('a state file that is a link: refused; a push never writes through a linked tree', async () => {
    const w = world();
    const version = join(w.store, 'ws', '100');
    mkdirSync(version, { recursive: true });
    writeFileSync(join(w.parent, 'state-elsewhere'), w.state([]));
    symlinkSync(join(w.parent, 'state-elsewhere'), join(version, '.sandbox-state'));
    await expect(w.pull()).rejects.toThrow(/symbolic link at .*\.sandbox-state/);

    const v = world();
    const target = join(v.parent, 'somewhere-else');
    mkdirSync(target);
    mkdirSync(v.store, { recursive: true });
    symlinkSync(target, join(v.store, 'ws'));
    writeFileSync(join(v.ws, 'work.txt'), 'work');
    await expect(syncPush({ root: v.ws, tree: 'ws', workspace: 'ws' }, await v.deps())).rejects.toThrow(/symbolic link at/);
    expect(readFileSync(join(v.ws, 'work.txt'), 'utf8')).toBe('work');
    rmSync(join(v.store, 'ws'));
    expect(existsSync(join(target, '100'))).toBe(false);
  });
});

// Nothing lost at the edges of a push (issue 20): a file changed while a push runs, in the same
// second, is pushed by the next push (the sync's time is its scan's start); a name a pull would
// refuse (a backslash) is refused at push, naming the file, instead of damaging the version.
import { readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import { configWith, depsFor, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

describe('push edges', () => {
  it('a file rewritten during a push, same size and same second, is sent by the next push', async () => {
    const parent = scratch('atlas-sync-edge-');
    const ws = join(parent, 'ws');
    const store = join(parent, 'store');
    writeTree(ws, { 'notes.txt': 'version A' });
    const second = 1_800_000_000;
    utimesSync(join(ws, 'notes.txt'), second, second);
    // The push scans at second S and ends at S+1.5; the file is rewritten in second S meanwhile.
    const clock = [second * 1000 + 100, second * 1000 + 1600];
    const now = () => clock.shift() ?? second * 1000 + 1600;
    const target = { root: ws, tree: 'ws', workspace: 'ws' };
    const first = await syncPush(target, await depsFor(configWith({ store }), parent, now));
    expect(first.stats.files_uploaded).toBe(1);
    writeFileSync(join(ws, 'notes.txt'), 'version B');
    utimesSync(join(ws, 'notes.txt'), second, second);
    const next = await syncPush(target, await depsFor(configWith({ store }), parent, () => (second + 5) * 1000));
    expect(next.stats.files_uploaded).toBe(1);
    const copy = join(parent, 'copy');
    await syncPull({ root: copy, tree: 'ws', workspace: 'ws' }, await depsFor(configWith({ store }), parent), {});
    expect(readFileSync(join(copy, 'notes.txt'), 'utf8')).toBe('version B');
  });

  it('refuses a file name with a backslash at push, naming it; the store keeps no damaged version', async () => {
    const parent = scratch('atlas-sync-edge-');
    const ws = join(parent, 'ws');
    const store = join(parent, 'store');
    writeTree(ws, { 'fine.txt': 'ok', 'a\\b.txt': 'backslash' });
    const target = { root: ws, tree: 'ws', workspace: 'ws' };
    await expect(syncPush(target, await depsFor(configWith({ store }), parent))).rejects.toMatchObject({
      message: expect.stringContaining('"a\\\\b.txt" contains a backslash'),
      hint: expect.stringContaining('sync.exclude'),
    });
    // Once it is renamed, the push goes through and pulls back (nothing damaged was stored before).
    renameSync(join(ws, 'a\\b.txt'), join(ws, 'a-b.txt'));
    const pushed = await syncPush(target, await depsFor(configWith({ store }), parent));
    expect(pushed.stats.files_uploaded).toBe(2);
    const copy = join(parent, 'copy');
    await syncPull({ root: copy, tree: 'ws', workspace: 'ws' }, await depsFor(configWith({ store }), parent), {});
    expect(readFileSync(join(copy, 'fine.txt'), 'utf8')).toBe('ok');
  });

  it('refuses a file name that is not UTF-8 at push, naming it, instead of storing a name no pull could give back', async () => {
    const parent = scratch('atlas-sync-edge-');
    const ws = join(parent, 'ws');
    const store = join(parent, 'store');
    writeTree(ws, { 'fine.txt': 'ok' });
    // "caf\xe9.txt" in Latin-1: a name Linux holds, and Node reads as "caf\uFFFD.txt".
    writeFileSync(Buffer.concat([Buffer.from(`${ws}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]), 'latin-1 name');
    const target = { root: ws, tree: 'ws', workspace: 'ws' };
    await expect(syncPush(target, await depsFor(configWith({ store }), parent))).rejects.toMatchObject({
      message: expect.stringContaining('"caf\uFFFD.txt" is not valid UTF-8'),
      hint: expect.stringContaining('rename'),
    });
  });
});

// Version retention in a folder store (`atlas sync prune`): the newest N complete versions stay
// whole, contents no kept version uses go once past the grace period, a dry run changes nothing,
// a push under way is never touched, and hostile names and symlinks are refused. Pruning after
// each push (sync.keep_versions) is in test/sync-keep-versions.test.ts.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planRetention } from '../src/domain/sync-retention.js';
import { syncPull } from '../src/sync/operations.js';
import { withWorkspaceLock } from '../src/sync/scan/local-state.js';
import { DirectoryStore } from '../src/sync/stores/dir-store.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import { renderPrune } from '../src/sync/versions/render-prune.js';
import { readStoredVersion, readTree, removeScratch, writeTree } from './helpers/sync-fixtures.js';
import { T0, world } from './helpers/sync-prune-fixtures.js';

/** The blobs of a tree in a folder store. */
function blobNames(store: string, tree: string): string[] {
  const area = join(store, tree, '.blobs');
  return readdirSync(area)
    .filter((n) => /^[0-9a-f]{2}$/.test(n))
    .flatMap((fan) => readdirSync(join(area, fan)))
    .sort();
}

/** Makes every blob (and temp file) of a tree `seconds` older, as if pushed that long ago. */
function ageBlobs(store: string, tree: string, seconds: number): void {
  const area = join(store, tree, '.blobs');
  const when = new Date(Date.now() - seconds * 1000);
  for (const fan of readdirSync(area)) for (const name of readdirSync(join(area, fan))) utimesSync(join(area, fan, name), when, when);
}

afterAll(() => removeScratch());

/** Every entry under `root`: type, bytes and link count (to see that nothing else moved). */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else out[path] = st.isSymbolicLink() ? 'link' : `${readFileSync(path, 'base64')} x${st.nlink}`;
    }
  };
  walk(root);
  return out;
}

describe('retention plan', () => {
  const names = ['100', '200', '300', '400', '500'];
  it('keeps the newest N complete versions and everything after the oldest kept one', () => {
    const conditions: Record<string, 'complete' | 'incomplete' | 'damaged'> = {
      '100': 'damaged',
      '200': 'complete',
      '300': 'incomplete',
      '400': 'complete',
      '500': 'incomplete',
    };
    expect(planRetention(names, (v) => conditions[v], 1, 10_000)).toEqual({ kept: ['400'], remove: ['100', '200', '300'], spared: [] });
    expect(planRetention(names, (v) => conditions[v], 5, 10_000)).toEqual({ kept: ['200', '400'], remove: ['100'], spared: [] });
    // 300 is incomplete and within the hour: a push may still be writing it.
    expect(planRetention(names, (v) => conditions[v], 1, 3_000)).toMatchObject({ remove: ['100', '200'], spared: [{ version: '300' }] });
    expect(planRetention(names, () => 'incomplete', 1, 10_000)).toEqual({ kept: [], remove: [], spared: [] });
    expect(() => planRetention(names, () => 'complete', 0, 10_000)).toThrow(RangeError);
  });
});

describe('atlas sync prune (folder store)', () => {
  it('keeps the newest N complete versions; contents no kept version uses go once past the grace period, packs mostly unused are taken apart; a pull gets the newest', async () => {
    const w = world();
    // One pack per push: [shared, version 0, 0], [version 1, 1], [version 2, 2], [version 3, 3].
    for (let i = 0; i < 4; i++) {
      if (i === 2) rmSync(join(w.src, 'only-1.txt'));
      await w.push(T0 + i * 100, { 'shared.txt': 'the same in every version', 'n.txt': `version ${i}`, [`only-${i}.txt`]: `${i}` });
    }
    const blobs = () => blobNames(w.store, 'ws');
    expect(blobs()).toHaveLength(4);
    const result = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 2 });
    expect(result).toMatchObject({ keep: 2, dry_run: false, removed: { versions: 2, blobs: 0 } });
    // The second pack is used by no kept version, but young; the first is mostly used (26 of 35 bytes).
    expect(result.trees[0]).toMatchObject({
      tree: 'ws',
      kept: [String(T0 + 200), String(T0 + 300)],
      spared: [],
      blobs: { removed: 0, young: 1, packs: { taken_apart: 0, unused_kept: 9 } },
    });
    expect(result.trees[0]!.removed.map((r) => [r.version, r.incomplete, r.objects])).toEqual([
      [String(T0), false, 1],
      [String(T0 + 100), false, 1],
    ]);
    expect(renderPrune(result)).toContain('spared 1 unused content(s) younger than an hour');
    expect(renderPrune(result)).toContain('9 B no kept version uses stays inside packs still mostly used');
    expect(w.versions()).toEqual([String(T0 + 200), String(T0 + 300)]);
    // Past the grace period the pack only the removed versions used goes; the rest stay.
    ageBlobs(w.store, 'ws', 2 * 3600);
    const later = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 2 });
    expect(later.removed).toMatchObject({ versions: 0, blobs: 1, blob_bytes: 10 });
    expect(blobs()).toHaveLength(3);
    // Keeping only the newest leaves 9 of the third pack's 10 bytes unused: it is taken apart, what
    // is still used ("2") becomes a blob of its own, and a pull reads it there.
    const apart = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 });
    expect(apart.removed).toMatchObject({ versions: 1, blobs: 1, blob_bytes: 9 });
    expect(apart.trees[0]!.blobs.packs).toEqual({ taken_apart: 1, moved: 1, unused_kept: 9 });
    expect(renderPrune(apart)).toContain('took apart 1 pack(s) mostly unused: 1 content(s) still used moved into blobs of their own');
    expect(blobs()).toContain(createHash('sha256').update('2').digest('hex'));
    const newest = readStoredVersion(w.store, 'ws', String(T0 + 300));
    expect(newest).toEqual({
      'shared.txt': 'the same in every version',
      'n.txt': 'version 3',
      'only-0.txt': '0',
      'only-2.txt': '2',
      'only-3.txt': '3',
    });
    const dest = join(w.base, 'dest');
    const pulled = await syncPull({ root: dest, tree: 'ws', workspace: 'ws' }, await w.deps(T0 + 10_000), {});
    expect(pulled.stats.version).toBe(String(T0 + 300));
    expect(readTree(dest)).toEqual(newest);
    // Nothing left to remove: another prune removes nothing.
    expect((await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 })).removed).toEqual({
      versions: 0,
      objects: 0,
      bytes: 0,
      blobs: 0,
      blob_bytes: 0,
    });
  });

  it('collects no content while a remaining version cannot be read, and removes what a killed push left in the blob area past the grace period', async () => {
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    await w.push(T0 + 100, { 'a.txt': 'b' });
    writeTree(join(w.store, 'ws', String(T0 + 50)), { '.sandbox-state': '{ damaged' });
    writeTree(join(w.store, 'ws', '.blobs', '.incoming'), { '123-1': 'half a blob' });
    ageBlobs(w.store, 'ws', 2 * 3600);
    const blocked = await syncPrune(w.target, await w.deps(T0 + 200), { keep: 3 });
    expect(blocked.trees[0]!.blobs).toMatchObject({
      removed: 0,
      skipped: expect.stringMatching(new RegExp(`version ${T0 + 50} has a corrupt .sandbox-state`)),
    });
    expect(blobNames(w.store, 'ws')).toHaveLength(2);
    const result = await syncPrune(w.target, await w.deps(T0 + 200), { keep: 1 });
    expect(result.removed).toMatchObject({ versions: 2, blobs: 1 });
    expect(readdirSync(join(w.store, 'ws', '.blobs', '.incoming'))).toEqual([]);
  });

  it('a dry run lists what would go and changes nothing', async () => {
    const w = world();
    writeTree(join(w.store, 'ws', String(T0 - 100)), { 'old.txt': 'abandoned' });
    await w.push(T0, { 'a.txt': 'a' });
    await w.push(T0 + 1, { 'a.txt': 'b' });
    const before = snapshot(w.store);
    const dry = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1, dryRun: true });
    expect(dry).toMatchObject({ dry_run: true, removed: { versions: 2, objects: 2 } });
    expect(dry.trees[0]!.removed[0]).toEqual({ version: String(T0 - 100), objects: 1, bytes: 9, incomplete: true });
    expect(snapshot(w.store)).toEqual(before);
  });

  it('incomplete versions: a young one is spared, an abandoned one removed, newer ones never touched; damaged old ones go', async () => {
    const w = world();
    const now = T0 + 20_000;
    const stored = (seconds: number, files: Record<string, string>) => writeTree(join(w.store, 'ws', String(seconds)), files);
    stored(now - 10_000, { 'a.txt': 'abandoned push' });
    stored(now - 9_500, { '.sandbox-state': 'not json', 'a.txt': 'damaged' });
    await w.push(now - 9_000, { 'a.txt': 'complete, old' });
    stored(now - 600, { 'a.txt': 'a push under way' });
    await w.push(now - 300, { 'a.txt': 'complete, newest' });
    stored(now - 100, { 'a.txt': 'a newer push under way' });
    const result = await syncPrune(w.target, await w.deps(now), { keep: 1 });
    expect(result.trees[0]).toMatchObject({
      kept: [String(now - 300)],
      removed: [
        { version: String(now - 10_000), incomplete: true },
        { version: String(now - 9_500), incomplete: false },
        { version: String(now - 9_000), incomplete: false },
      ],
      spared: [{ version: String(now - 600), reason: expect.stringMatching(/push may still be writing it/) }],
    });
    expect(w.versions()).toEqual([String(now - 600), String(now - 300), String(now - 100)]);
    expect(renderPrune(result)).toBe(
      [
        `removed 3 version(s), 4 file(s), ${result.removed.bytes} B (${w.store}; keeping the newest 1)`,
        `  ws: kept ${now - 300}`,
        `    removed ${now - 10_000}  1 file(s), 14 B (incomplete)`,
        `    removed ${now - 9_500}  2 file(s), 15 B`,
        `    removed ${now - 9_000}  1 file(s), ${result.trees[0]!.removed[2]!.bytes} B`,
        `    spared ${now - 600}  incomplete and younger than an hour: a push may still be writing it`,
        `    spared 1 unused content(s) younger than an hour: a push may be about to use them`,
      ].join('\n'),
    );
    // An hour later the stalled push is abandoned and goes; the one newer than the kept version stays.
    const later = await syncPrune(w.target, await w.deps(now + 3_600), { keep: 1 });
    expect(later.trees[0]!.removed.map((r) => r.version)).toEqual([String(now - 600)]);
    expect(w.versions()).toEqual([String(now - 300), String(now - 100)]);
  });

  it('never removes the newest complete version, nor anything when no version is complete', async () => {
    const w = world();
    writeTree(join(w.store, 'ws', String(T0)), { 'a.txt': 'incomplete' });
    writeTree(join(w.store, 'ws', String(T0 + 1)), { '.sandbox-state': '{', 'a.txt': 'damaged' });
    const none = await syncPrune(w.target, await w.deps(T0 + 100_000), { keep: 1 });
    expect(none.trees[0]).toEqual({
      tree: 'ws',
      kept: [],
      removed: [],
      spared: [],
      blobs: { removed: 0, bytes: 0, young: 0, skipped: expect.stringMatching(/version 1700000001 has a corrupt/) },
    });
    expect(
      renderPrune({ ...none, dry_run: true })
        .split('\n')
        .slice(0, 2),
    ).toEqual([
      `dry run: would remove 0 version(s), 0 file(s), 0 B (${w.store}; keeping the newest 1)`,
      '  ws: kept everything (no complete version)',
    ]);
    await w.push(T0 + 50, { 'a.txt': 'the only complete one' });
    const result = await syncPrune(w.target, await w.deps(T0 + 100_000), { keep: 1 });
    expect(result.trees[0]!.kept).toEqual([String(T0 + 50)]);
    expect(w.versions()).toEqual([String(T0 + 50)]);
  });

  it('refuses without N (neither --keep nor sync.keep_versions), or with N < 1, before touching the store', async () => {
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    await expect(syncPrune(w.target, await w.deps(), {})).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/nothing says how many versions to keep/),
      hint: expect.stringMatching(/--keep N .*sync\.keep_versions/),
    });
    await expect(syncPrune(w.target, await w.deps(), { keep: 0 })).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/--keep 0: at least the newest version is always kept/),
    });
    expect(w.versions()).toEqual([String(T0)]);
  });

  it('refuses hostile tree and version names and symlinks on the way; nothing outside the version is touched', async () => {
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    const outside = join(w.base, 'outside');
    writeTree(outside, { '.sandbox-state': '{}', 'precious.txt': 'keep me', '123/x': 'x' });
    const { store } = await w.deps();
    const before = snapshot(w.base);
    for (const [tree, version] of [
      ['../outside', '123'],
      ['ws/../..', '123'],
      ['ws/.tasks/../../outside', '123'],
      ['/abs', '1'],
      ['', '1'],
      ['ws', '../../outside'],
      ['ws', '1/..'],
      ['ws', ''],
      ['ws', '12a'],
    ]) {
      await expect(store.removeVersion(tree!, version!), `${tree} ${version}`).rejects.toMatchObject({
        exitCode: 2,
        message: expect.stringMatching(/^refusing to remove/),
      });
    }
    symlinkSync(outside, join(w.store, 'ws', String(T0 + 5)));
    await expect(store.removeVersion('ws', String(T0 + 5))).rejects.toThrow(/is a symlink: refusing to remove anything through it/);
    symlinkSync(outside, join(w.store, 'linked'));
    await expect(store.removeVersion('linked', '123')).rejects.toThrow(/linked is a symlink/);
    expect(snapshot(outside)).toEqual(Object.fromEntries(Object.entries(before).filter(([p]) => p.startsWith(outside))));
    // A version already gone is empty, not an error.
    expect(await store.removeVersion('ws', '42')).toEqual({ objects: 0, bytes: 0, incomplete: true });
    // A store path that is a file: named, nothing done.
    await expect(new DirectoryStore(join(outside, 'precious.txt')).removeVersion('ws', '1')).rejects.toMatchObject({
      message: expect.stringMatching(/^cannot read .*precious\.txt\/ws: ENOTDIR/),
      hint: expect.any(String),
    });
  });

  it("waits for the folder's sync lock, like push and pull", async () => {
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    await w.push(T0 + 1, { 'a.txt': 'b' });
    let pruned = false;
    let release!: () => void;
    const held = withWorkspaceLock(w.src, () => new Promise<void>((ok) => (release = ok)));
    await new Promise((ok) => setTimeout(ok, 50));
    const pruning = syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 }).then((r) => {
      pruned = true;
      return r;
    });
    await new Promise((ok) => setTimeout(ok, 300));
    expect(pruned).toBe(false);
    expect(w.versions()).toHaveLength(2);
    release();
    await held;
    expect((await pruning).removed.versions).toBe(1);
  });

  it("takes no folder's lock when the workspace is named alone (--workspace without --dir)", async () => {
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    await w.push(T0 + 1, { 'a.txt': 'b' });
    let release!: () => void;
    // The current directory of such a prune is not the workspace's folder: its lock is not waited for.
    const held = withWorkspaceLock(w.src, () => new Promise<void>((ok) => (release = ok)));
    await new Promise((ok) => setTimeout(ok, 50));
    try {
      const named: SyncTarget = { root: w.src, tree: 'ws', workspace: 'ws', named: true };
      expect((await syncPrune(named, await w.deps(T0 + 10_000), { keep: 1 })).removed.versions).toBe(1);
      expect(w.versions()).toEqual([String(T0 + 1)]);
    } finally {
      release();
      await held;
    }
  });
});

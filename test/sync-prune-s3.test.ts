// Version retention in an S3 store, against a real s3rver on 127.0.0.1 (and, for what s3rver
// cannot do, a fault proxy in front of it): keep N, dry run, abandoned and young incomplete
// versions, a pull after a prune, batches of 1,000 with Content-MD5 and the state deleted first,
// the per-key fallback, per-key errors, refused deletes, an unreachable endpoint.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { beforeEach, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import { mapPool } from '../src/sync/scan/pool.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import { listKeys, S3RVER_ENV, s3rverClient } from './helpers/s3rver.js';
import { s3rverBehindProxy } from './helpers/s3rver-proxied.js';
import { configWith, depsFor, readTree, scratch, writeTree } from './helpers/sync-fixtures.js';

const s3 = s3rverBehindProxy('atlas-prune');
beforeEach(() => {
  s3.proxy.mode = 'pass';
  s3.proxy.deletes.length = 0;
});

const T0 = 1_700_000_000;

/** The deletes of versions and contents: a push's lease and a prune's lock (versions/locks.ts) are removed too. */
const deletes = () => s3.proxy.deletes.filter((d) => !d.url.includes('/.locks/'));
const client = () => s3rverClient(s3.server);
const keys = (prefix: string) => listKeys(s3.server, prefix);

const put = (key: string, body: string) => client().send(new PutObjectCommand({ Bucket: s3.server.bucket, Key: key, Body: body }));

let prefixes = 0;
/** A fresh prefix; `viaProxy` sends atlas's requests through the fault proxy. */
function world(options: { viaProxy?: boolean; keep_versions?: number } = {}) {
  const prefix = `p${++prefixes}`;
  const base = scratch('atlas-prune-s3-');
  const src = join(base, 'src');
  mkdirSync(src);
  const config = configWith({
    store: `s3://${s3.server.bucket}/${prefix}`,
    keep_versions: options.keep_versions ?? 0,
    s3: { endpoint: options.viaProxy ? s3.proxy.endpoint : s3.server.endpoint, force_path_style: true },
  });
  const target: SyncTarget = { root: src, tree: 'ws', workspace: 'ws' };
  const deps = (seconds = T0) => depsFor(config, join(base, 'home'), () => seconds * 1000);
  const push = async (seconds: number, files: Record<string, string>) => {
    writeTree(src, files);
    return syncPush(target, await deps(seconds));
  };
  const versionsLeft = async () => [...new Set((await keys(`${prefix}/ws/`)).map((k) => k.split('/')[2]!))].filter((v) => /^\d+$/.test(v));
  /** A version in the layout before content addressing: its files under the version, the state last. */
  const legacy = async (version: number, files: Record<string, string>) => {
    for (const [path, body] of Object.entries(files)) await put(`${prefix}/ws/${version}/${path}`, body);
    const state = {
      version: '1.0',
      last_synced_at: version,
      files: Object.entries(files).map(([path, body]) => ({
        path,
        checksum: createHash('md5').update(body).digest('hex'),
        size: body.length,
        modified_at: version,
      })),
    };
    await put(`${prefix}/ws/${version}/.sandbox-state`, JSON.stringify(state));
  };
  return { prefix, base, src, config, target, deps, push, versionsLeft, legacy };
}

describe('atlas sync prune (S3, s3rver)', () => {
  it('keeps the newest N; a dry run changes nothing; a pull afterwards gets the newest version', async () => {
    const w = world();
    for (let i = 0; i < 3; i++) await w.push(T0 + i * 100, { 'shared.txt': 'same', 'n.txt': `v${i}`, 'dir/deep.txt': 'deep' });
    const before = await keys(`${w.prefix}/`);
    const dry = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1, dryRun: true });
    expect(dry).toMatchObject({ dry_run: true, removed: { versions: 2, objects: 2 } });
    expect(await keys(`${w.prefix}/`)).toEqual(before);
    const result = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 });
    // One pack per push: the second one's ("v1") is used by no kept version but young; the first
    // one's is mostly used ("same" and "deep"), and stays whole.
    expect(result.trees[0]).toMatchObject({
      kept: [String(T0 + 200)],
      removed: [
        { version: String(T0), objects: 1, incomplete: false },
        { version: String(T0 + 100), objects: 1 },
      ],
      blobs: { removed: 0, young: 1, packs: { taken_apart: 0, unused_kept: 2 } },
    });
    expect(result.removed.bytes).toBe(dry.removed.bytes);
    expect(await w.versionsLeft()).toEqual([String(T0 + 200)]);
    const dest = join(w.base, 'dest');
    const pulled = await syncPull({ ...w.target, root: dest }, await w.deps(T0 + 10_000), {});
    expect(pulled.stats.version).toBe(String(T0 + 200));
    expect(readTree(dest)).toEqual({ 'shared.txt': 'same', 'n.txt': 'v2', 'dir/deep.txt': 'deep' });
  }, 30_000);

  it('removes an abandoned incomplete version, spares a young one, never touches a newer one', async () => {
    const w = world();
    const now = T0 + 20_000;
    // A top-level object in each: s3rver's delimiter listings see a version folder only by one.
    await put(`${w.prefix}/ws/${now - 10_000}/a.txt`, 'abandoned');
    await put(`${w.prefix}/ws/${now - 10_000}/d/b.txt`, 'abandoned too');
    await w.push(now - 9_000, { 'a.txt': 'old' });
    await put(`${w.prefix}/ws/${now - 600}/a.txt`, 'under way');
    await w.push(now - 300, { 'a.txt': 'newest' });
    await put(`${w.prefix}/ws/${now - 100}/a.txt`, 'newer, under way');
    const result = await syncPrune(w.target, await w.deps(now), { keep: 1 });
    expect(result.trees[0]).toMatchObject({
      removed: [
        { version: String(now - 10_000), objects: 2, incomplete: true },
        { version: String(now - 9_000), incomplete: false },
      ],
      spared: [{ version: String(now - 600) }],
    });
    expect(await w.versionsLeft()).toEqual([String(now - 600), String(now - 300), String(now - 100)]);
    const versions = await syncVersions(w.target, await w.deps(now));
    expect(versions.versions.map((v) => v.status)).toEqual(['incomplete', 'complete', 'incomplete']);
  });

  it('deletes past 1,000 objects in batches with Content-MD5, the .sandbox-state first, and nothing outside the version', async () => {
    const w = world({ viaProxy: true });
    const old = `${w.prefix}/ws/${T0}`;
    await put(`${old}/.sandbox-state`, '{"version":"1.0","last_synced_at":1,"files":[]}');
    await mapPool(
      Array.from({ length: 1001 }, (_, i) => i),
      32,
      (i) => put(`${old}/d${i % 7}/f${i}`, `${i}`),
    );
    await put(`${w.prefix}/ws/${T0}0/neighbour.txt`, 'a longer name sharing the prefix');
    await w.push(T0 + 100, { 'a.txt': 'newest' });
    s3.proxy.deletes.length = 0;
    const result = await syncPrune(w.target, await w.deps(T0 + 100_000), { keep: 1 });
    // The neighbour (version T0 * 10, the newest by number) is kept; only version T0 goes.
    expect(result.trees[0]!.removed).toEqual([{ version: String(T0), objects: 1002, bytes: expect.any(Number), incomplete: false }]);
    // s3rver sometimes answers 500 to a batch delete (its parallel removal of files and their
    // folders races); the SDK retries it, so only the answered requests are compared.
    const answered = deletes().filter((d) => d.status! < 300);
    expect(answered.map((d) => [d.method, d.keys])).toEqual([
      ['DELETE', 0],
      ['POST', 1000],
      ['POST', 1],
    ]);
    expect(deletes()[0]!.url).toContain(`${T0}/.sandbox-state`);
    expect(
      deletes()
        .filter((d) => d.method === 'POST')
        .every((d) => d.md5Ok),
    ).toBe(true);
    expect(await keys(`${old}/`)).toEqual([]);
    expect(await keys(`${w.prefix}/ws/${T0}0/`)).toEqual([`${w.prefix}/ws/${T0}0/neighbour.txt`]);
  }, 60_000);

  it('falls back to one DeleteObject per key where DeleteObjects is not implemented (versions in the old layout)', async () => {
    const w = world({ viaProxy: true });
    await w.legacy(T0, { 'a.txt': 'a', 'b/c.txt': 'c' });
    await w.legacy(T0 + 1, { 'a.txt': 'A', 'b/c.txt': 'c' });
    await w.push(T0 + 2, { 'a.txt': 'AA', 'b/c.txt': 'c' });
    s3.proxy.mode = 'no-batch';
    s3.proxy.deletes.length = 0;
    const result = await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 });
    expect(result.removed).toMatchObject({ versions: 2, objects: 6 });
    // The first version: its state, one refused batch, then the two files one by one; the second
    // version goes straight to single deletes.
    expect(
      deletes()
        .filter((d) => d.status !== 500)
        .map((d) => d.method),
    ).toEqual(['DELETE', 'POST', 'DELETE', 'DELETE', 'DELETE', 'DELETE', 'DELETE']);
    expect(await w.versionsLeft()).toEqual([String(T0 + 2)]);
  });

  it('per-key errors are named with the fix, and the version is left incomplete (never pulled as whole)', async () => {
    const w = world({ viaProxy: true });
    await w.legacy(T0, { 'a.txt': 'a', 'b.txt': 'b' });
    await w.push(T0 + 1, { 'a.txt': 'new' });
    s3.proxy.mode = 'batch-denied';
    await expect(syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 })).rejects.toMatchObject({
      message: expect.stringMatching(
        new RegExp(
          `pruning ws .*version ${T0} could not be removed: 2 object\\(s\\) under ${w.prefix}/ws/${T0}/ .*could not be deleted: ${w.prefix}/ws/${T0}/a.txt \\(AccessDenied: Access Denied\\)`,
        ),
      ),
      hint: expect.stringMatching(/s3:DeleteObject/),
    });
    s3.proxy.mode = 'pass';
    const versions = await syncVersions(w.target, await w.deps());
    expect(versions.versions.map((v) => [v.version, v.status])).toEqual([
      [String(T0), 'incomplete'],
      [String(T0 + 1), 'complete'],
    ]);
    // Run again: the rest goes.
    expect((await syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 })).trees[0]!.removed).toMatchObject([
      { version: String(T0), objects: 2, incomplete: true },
    ]);
  });

  it('a refused delete stops before anything is removed; after a push it is a warning, not a failure', async () => {
    const w = world({ viaProxy: true, keep_versions: 1 });
    await w.push(T0, { 'a.txt': 'a' });
    s3.proxy.mode = 'deny-deletes';
    const deps = await w.deps(T0 + 10_000);
    writeTree(w.src, { 'a.txt': 'b' });
    const pushed = await syncPush(w.target, deps);
    expect(pushed.stats.version).toBe(String(T0 + 10_000));
    expect(pushed.prune_failed).toMatch(/push succeeded, but removing old versions .*access denied to a delete of .*\.sandbox-state/);
    expect(deps.warnings.join('\n')).toMatch(/s3:DeleteObject/);
    expect((await keys(`${w.prefix}/ws/${T0}/`)).length).toBe(1);
    await expect(syncPrune(w.target, await w.deps(T0 + 10_000), {})).rejects.toMatchObject({
      exitCode: 1,
      hint: expect.stringMatching(/s3:DeleteObject/),
    });
  });

  it('fails clearly on an unreachable endpoint and on refused credentials, before removing anything', async () => {
    const config = configWith({
      store: 's3://nobody-listens/x',
      retries: 1,
      s3: { endpoint: 'http://127.0.0.1:9', force_path_style: true },
    });
    const target = { root: scratch(), tree: 'ws', workspace: 'ws' };
    await expect(syncPrune(target, await depsFor(config, scratch()), { keep: 1 })).rejects.toMatchObject({
      message: expect.stringMatching(/network error on a listing of s3:\/\/nobody-listens\/x .*ECONNREFUSED/),
      hint: expect.stringMatching(/run the command again/),
    });
    await expect((await depsFor(config, scratch())).store.removeVersion('ws', '1')).rejects.toThrow(
      /network error on a listing of x\/ws\/1\//,
    );
    const w = world();
    await w.push(T0, { 'a.txt': 'a' });
    await w.push(T0 + 1, { 'a.txt': 'b' });
    process.env['AWS_SECRET_ACCESS_KEY'] = 'wrong';
    process.env['AWS_ACCESS_KEY_ID'] = 'NOT-S3RVER';
    try {
      await expect(syncPrune(w.target, await w.deps(T0 + 10_000), { keep: 1 })).rejects.toMatchObject({
        exitCode: 3,
        message: expect.stringMatching(/credentials were refused/),
      });
    } finally {
      Object.assign(process.env, S3RVER_ENV);
    }
    expect(await w.versionsLeft()).toEqual([String(T0), String(T0 + 1)]);
  });

  it('refuses hostile tree and version names before building a key', async () => {
    const w = world({ viaProxy: true });
    await w.push(T0, { 'a.txt': 'a' });
    const { store } = await w.deps();
    for (const [tree, version] of [
      ['..', String(T0)],
      ['ws/../../x', String(T0)],
      ['ws', '..'],
      ['ws', `${T0}/..`],
      ['ws', '*'],
    ]) {
      await expect(store.removeVersion(tree!, version!)).rejects.toMatchObject({
        exitCode: 2,
        message: expect.stringMatching(/^refusing to remove/),
      });
    }
    expect(deletes()).toEqual([]);
    expect(await w.versionsLeft()).toEqual([String(T0)]);
  });

  it('a push that fails as it commits leaves nothing a reader sees; the next push publishes, sending its small contents again', async () => {
    const w = world({ viaProxy: true });
    s3.proxy.mode = 'deny-state-put';
    await expect(w.push(T0, { 'a.txt': 'a', 'd/b.txt': 'b' })).rejects.toThrow(/access denied to p\d+\/ws\/\d+\/\.sandbox-state/);
    expect((await keys(`${w.prefix}/`)).every((k) => k.startsWith(`${w.prefix}/ws/.blobs/`))).toBe(true);
    expect(await w.versionsLeft()).toEqual([]);
    expect((await syncVersions(w.target, await w.deps())).versions).toEqual([]);
    s3.proxy.mode = 'pass';
    const again = await syncPush(w.target, await w.deps(T0 + 1));
    // Contents under 1 MiB are not asked about: sent again, over the ones the failed push left.
    expect(again.stats).toMatchObject({ version: String(T0 + 1), files_uploaded: 2, files_reused: 0, bytes_transferred: 2 });
    const dest = join(w.base, 'dest');
    await syncPull({ ...w.target, root: dest }, await w.deps(T0 + 1), {});
    expect(readTree(dest)).toEqual({ 'a.txt': 'a', 'd/b.txt': 'b' });
  });

  it('a server that refuses conditional writes (501 to If-None-Match) gets plain ones: the push publishes, and asks once per store', async () => {
    const w = world({ viaProxy: true });
    s3.proxy.mode = 'no-conditional-put';
    const failed = s3.proxy.failed;
    try {
      const deps = await w.deps(T0);
      const target = (root: string) => ({ ...w.target, root });
      const src = join(w.base, 'src-nc');
      writeTree(src, { 'a.txt': 'a' });
      expect((await syncPush(target(src), deps)).stats.version).toBe(String(T0));
      writeTree(src, { 'a.txt': 'a2' });
      expect((await syncPush(target(src), { ...deps, now: () => (T0 + 1) * 1000 })).stats.version).toBe(String(T0 + 1));
      expect(s3.proxy.failed - failed).toBe(1);
      const dest = join(w.base, 'dest-nc');
      await syncPull(target(dest), await w.deps(T0 + 1), {});
      expect(readTree(dest)).toEqual({ 'a.txt': 'a2' });
    } finally {
      s3.proxy.mode = 'pass';
    }
  });
});

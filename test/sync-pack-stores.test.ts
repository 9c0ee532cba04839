// Packs in real stores (docs/sync.md#packs): small contents travel and rest together, a manifest
// entry names its pack and offset, a pull reads neighbours in one ranged read, a push run again
// after a kill finds the packs it had sent, and pruning takes apart a pack that is mostly unused.
// Real pushes and pulls on a folder store, with files changed under a push at the moment it sends,
// and on s3rver and moto behind a fault proxy (a server that ignores Range, an answer cut off).
// The rules alone are in test/sync-pack-rules.test.ts.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACK_BELOW } from '../src/domain/sync-pack.js';
import type { StateFile } from '../src/domain/sync-state.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import { renderPrune } from '../src/sync/versions/render-prune.js';
import { MOTO_ENV, motoMissing, startMoto } from './helpers/moto.js';
import type { FaultProxy } from './helpers/s3-fault-proxy.js';
import { startFaultProxy } from './helpers/s3-fault-proxy.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import {
  blobFiles,
  changingAfterScan,
  configWith,
  depsFor,
  readStoredVersion,
  readTree,
  removeScratch,
  scratch,
  storeWith,
  writeTree,
} from './helpers/sync-fixtures.js';
import { P, sha } from './helpers/sync-pack-fixtures.js';

afterAll(() => removeScratch());

/** A push whose files are changed by `change` after the scan, just before it sends anything. */
/** A push whose files `change` between its scan and its reads; strict (--strict), as these tests check the refusal. */
function pushChanging(target: SyncTarget, deps: Awaited<ReturnType<typeof depsFor>>, change: () => void, strict = true) {
  return syncPush(target, { ...deps, store: changingAfterScan(deps.store, change) }, { strict });
}

function folder() {
  const base = scratch('atlas-packs-');
  const store = join(base, 'store');
  const src = join(base, 'src');
  const config = configWith({ store });
  const target = (root = src): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const deps = () => depsFor(config, join(base, 'home'));
  return { base, store, src, target, deps };
}

describe('packs in a folder store', () => {
  it('stores small contents in one pack, a large one alone, and pulls them back whole, an empty file too', async () => {
    const w = folder();
    const large = Buffer.alloc(1024 * 1024 + 1, 'L');
    writeTree(w.src, { 'a.txt': 'alpha', 'b/c.txt': 'gamma', empty: '', 'copy.txt': 'alpha', 'large.bin': large });
    const pushed = await syncPush(w.target(), await w.deps());
    expect(pushed.stats).toMatchObject({ files_uploaded: 4, bytes_transferred: 10 + large.length });
    const state = JSON.parse(readFileSync(join(w.store, 'ws', pushed.stats.version!, '.sandbox-state'), 'utf8')) as StateFile;
    const [pack] = blobFiles(w.store, 'ws').filter((f) => !f.endsWith(sha(large)));
    expect(readFileSync(pack!, 'utf8')).toHaveLength(10);
    const byPath = Object.fromEntries(state.files.map((f) => [f.path, f]));
    expect(byPath['a.txt']!.pack).toBe(sha(readFileSync(pack!)));
    expect(byPath['copy.txt']).toMatchObject({ pack: byPath['a.txt']!.pack, offset: byPath['a.txt']!.offset });
    expect(byPath['large.bin']!.pack).toBeUndefined();
    // The folder's own state never says where contents are.
    expect(readFileSync(join(w.src, '.sandbox-state'), 'utf8')).not.toContain('"pack"');
    const dest = join(w.base, 'dest');
    expect((await syncPull(w.target(dest), await w.deps(), {})).stats.files_downloaded).toBe(5);
    expect(readTree(dest)).toEqual(readTree(w.src));
  });

  it('more packs than are built at once: each is read into memory a sent one had, and holds only its own contents', async () => {
    const w = folder();
    // 27 contents of 0.9-1 MiB: five packs of 5 (of unlike sizes) and one of 2, more than the 3
    // built at once, so the later ones are read into the memory of sent ones, some longer than they.
    const tree: Record<string, Buffer> = {};
    for (let i = 0; i < 27; i++) tree[`f${String(i).padStart(2, '0')}.bin`] = randomBytes(PACK_BELOW - 1 - ((i * 7919) % 100_000));
    writeTree(w.src, tree);
    const pushed = await syncPush(w.target(), await w.deps());
    expect(pushed.stats.files_uploaded).toBe(27);
    const state = JSON.parse(readFileSync(join(w.store, 'ws', pushed.stats.version!, '.sandbox-state'), 'utf8')) as StateFile;
    const packs = blobFiles(w.store, 'ws');
    expect(packs).toHaveLength(6);
    // Every pack is exactly its contents, named by its own hash, each content where the manifest says.
    expect(packs.reduce((n, p) => n + statSync(p).size, 0)).toBe(Object.values(tree).reduce((n, b) => n + b.length, 0));
    for (const p of packs) expect(p.endsWith(sha(readFileSync(p)))).toBe(true);
    for (const f of state.files) {
      const pack = readFileSync(packs.find((p) => p.endsWith(f.pack!))!);
      expect(sha(pack.subarray(f.offset!, f.offset! + f.size))).toBe(sha(tree[f.path]!));
    }
    const dest = join(w.base, 'dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(readTree(dest)).toEqual(readTree(w.src));
  }, 30_000);

  it('a folder state that names packs is not trusted: warned about, and the push hashes everything again', async () => {
    const w = folder();
    writeTree(w.src, { 'a.txt': 'alpha' });
    await syncPush(w.target(), await w.deps());
    const path = join(w.src, '.sandbox-state');
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(`"sha256":"${sha('alpha')}"`, `"sha256":"${sha('alpha')}","pack":"${P}","offset":0`),
    );
    writeTree(w.src, { 'b.txt': 'beta' });
    const deps = await w.deps();
    const pushed = await syncPush(w.target(), deps);
    expect(deps.warnings.join()).toMatch(/corrupt .*says where its content is stored/);
    const dest = join(w.base, 'dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(readTree(dest)).toEqual({ 'a.txt': 'alpha', 'b.txt': 'beta' });
    expect(readStoredVersion(w.store, 'ws', pushed.stats.version!)).toEqual({ 'a.txt': 'alpha', 'b.txt': 'beta' });
  });

  it('a file rewritten after the scan is packed as read; one grown past 1 MiB goes alone; the other holder of a changed content is sent too', async () => {
    const w = folder();
    writeTree(w.src, { 'keep.txt': 'base' });
    await syncPush(w.target(), await w.deps());
    writeTree(w.src, {
      'edit.txt': 'before',
      'grow.txt': 'small',
      'one.txt': 'shared',
      'shrink.txt': 'a longer text',
      'two.txt': 'shared',
    });
    const big = Buffer.alloc(1024 * 1024 + 3, 'G');
    const pushed = await pushChanging(w.target(), await w.deps(), () => {
      // The same size (read into its place in the pack), larger, past 1 MiB, smaller.
      writeFileSync(join(w.src, 'edit.txt'), 'AFTER!');
      writeFileSync(join(w.src, 'grow.txt'), big);
      writeFileSync(join(w.src, 'one.txt'), 'one changed');
      writeFileSync(join(w.src, 'shrink.txt'), 'tiny');
    });
    const stored = readStoredVersion(w.store, 'ws', pushed.stats.version!);
    expect(stored).toEqual({
      'keep.txt': 'base',
      'edit.txt': 'AFTER!',
      'grow.txt': big.toString(),
      'one.txt': 'one changed',
      'shrink.txt': 'tiny',
      'two.txt': 'shared',
    });
    expect(blobFiles(w.store, 'ws')).toContain(join(w.store, 'ws', '.blobs', sha(big).slice(0, 2), sha(big)));
    // The files changed since the scan are hashed again by the next push, which finds nothing new.
    const next = await syncPush(w.target(), await w.deps());
    expect(next.stats.version).toBeNull();
  });

  it('with --strict, a file that became a link or went away after the scan stops the push, naming it, small or large; nothing is published', async () => {
    for (const file of ['a.txt', 'large.bin']) {
      for (const [name, change] of [
        ['is a symbolic link now', (src: string) => (rmSync(join(src, file)), symlinkSync('/etc/hostname', join(src, file)))],
        ['is gone', (src: string) => rmSync(join(src, file))],
      ] as const) {
        const w = folder();
        writeTree(w.src, { 'a.txt': 'alpha', 'b.txt': 'beta', 'large.bin': Buffer.alloc(1024 * 1024 + 1, 'L') });
        await expect(pushChanging(w.target(), await w.deps(), () => change(w.src))).rejects.toMatchObject({
          message: expect.stringContaining(`${file} ${name}: it changed while it was being pushed; nothing was published`),
          hint: expect.stringContaining('push again'),
        });
        expect((await syncVersions(w.target(), await w.deps())).versions).toEqual([]);
      }
    }
  });

  it('a pack that cannot be stored fails the push: no version, and the next push publishes', async () => {
    const w = folder();
    writeTree(w.src, { 'a.txt': 'alpha' });
    const deps = await w.deps();
    const store = storeWith(deps.store, { putBytes: async () => Promise.reject(new Error('disk full')) });
    await expect(syncPush(w.target(), { ...deps, store })).rejects.toThrow('disk full');
    expect((await syncVersions(w.target(), await w.deps())).versions).toEqual([]);
    expect((await syncPush(w.target(), await w.deps())).stats.files_uploaded).toBe(1);
  });

  it('a pack is read through no symbolic link', async () => {
    const w = folder();
    writeTree(w.src, { 'a.txt': 'alpha' });
    await syncPush(w.target(), await w.deps());
    const [pack] = blobFiles(w.store, 'ws');
    const elsewhere = join(w.base, 'elsewhere');
    writeFileSync(elsewhere, 'alpha');
    rmSync(pack!);
    symlinkSync(elsewhere, pack!);
    await expect(syncPull(w.target(join(w.base, 'dest')), await w.deps(), {})).rejects.toThrow(/symbolic link/);
  });

  it('pruning leaves a pack whose contents do not match their hashes whole, and names it; a dry run takes nothing apart', async () => {
    const w = folder();
    writeTree(w.src, { 'keep.txt': 'k', 'gone.txt': 'a long content that the next version drops' });
    await syncPush(w.target(), await w.deps());
    rmSync(join(w.src, 'gone.txt'));
    writeTree(w.src, { 'new.txt': 'n' });
    await syncPush(w.target(), await w.deps());
    const packs = blobFiles(w.store, 'ws');
    const first = packs.find((p) => statSync(p).size > 10)!;
    const hour = new Date(Date.now() - 2 * 3600 * 1000);
    for (const p of packs) utimesSync(p, hour, hour);
    const dry = await syncPrune(w.target(), await w.deps(), { keep: 1, dryRun: true });
    expect(dry.trees[0]!.blobs.packs).toMatchObject({ taken_apart: 1, moved: 1 });
    expect(renderPrune(dry)).toContain(
      'would take apart 1 pack(s) mostly unused: 1 content(s) still used would move into blobs of their own',
    );
    expect(blobFiles(w.store, 'ws')).toEqual(packs);
    // "k" is the first byte of the first pack: damaged, it must not be moved, nor the pack removed.
    const bytes = readFileSync(first);
    bytes[bytes.indexOf('k')] = 'x'.charCodeAt(0);
    writeFileSync(first, bytes);
    utimesSync(first, hour, hour);
    const pruned = await syncPrune(w.target(), await w.deps(), { keep: 1 });
    expect(pruned.trees[0]!.blobs).toMatchObject({
      packs: { taken_apart: 0 },
      damaged: expect.stringContaining('do not match their hashes'),
    });
    expect(renderPrune(pruned)).toContain('was left whole');
    expect(blobFiles(w.store, 'ws')).toContain(first);
  });
});

describe('taking a pack apart while a push uses it again', () => {
  it('a pack made young again while pruning moved its contents out stays whole, with what only a removed version used', async () => {
    const w = folder();
    writeTree(w.src, { 'keep.txt': 'k', 'gone.txt': 'a long content that the next version drops' });
    const first = await syncPush(w.target(), await w.deps());
    rmSync(join(w.src, 'gone.txt'));
    await syncPush(w.target(), await w.deps());
    const [pack] = blobFiles(w.store, 'ws');
    const hour = new Date(Date.now() - 2 * 3600 * 1000);
    utimesSync(pack!, hour, hour);
    // While the prune moves "k" out, a push finds the same pack and makes it young again (as a
    // push run again after a kill does), then publishes a version that names all of it.
    const deps = await w.deps();
    const store = storeWith(deps.store, {
      putBytes: async (tree, body) => {
        const name = await deps.store.putBytes(tree, body);
        utimesSync(pack!, new Date(), new Date());
        return name;
      },
    });
    const pruned = await syncPrune(w.target(), { ...deps, store }, { keep: 1 });
    expect(pruned.trees[0]!.blobs.packs).toMatchObject({ taken_apart: 0 });
    // The pack stays whole: "gone.txt", which only the removed version used, is still in it for the push's version.
    expect(blobFiles(w.store, 'ws')).toContain(pack);
    expect(readFileSync(pack!, 'utf8')).toContain('a long content that the next version drops');
    expect((await syncVersions(w.target(), await w.deps())).versions.map((v) => v.version)).not.toContain(first.stats.version);
  });
});

describe.each(['s3rver', 'moto'] as const)('packs in S3 (%s, through a fault proxy)', (kind) => {
  const skip = kind === 'moto' && motoMissing() !== undefined;
  let server: S3Server | undefined;
  let proxy: FaultProxy | undefined;
  const savedEnv = { ...process.env };
  beforeAll(async () => {
    if (skip) return;
    server = kind === 'moto' ? await startMoto('atlas-packs') : await startS3rver('atlas-packs');
    proxy = await startFaultProxy(server.endpoint);
    Object.assign(process.env, kind === 'moto' ? MOTO_ENV : S3RVER_ENV, {
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      AWS_CONFIG_FILE: '/nonexistent',
    });
  }, 30_000);
  afterAll(async () => {
    process.env = savedEnv;
    await proxy?.stop();
    await server?.stop();
  });
  let prefixes = 0;
  const world = () => {
    proxy!.mode = 'pass';
    const config = configWith({
      store: `s3://${server!.bucket}/p${++prefixes}`,
      retries: 3,
      s3: { endpoint: proxy!.endpoint, force_path_style: true },
    });
    const base = scratch('atlas-packs-s3-');
    const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
    return { base, target, deps: () => depsFor(config, join(base, 'home')) };
  };
  const files = (n: number, size: number) =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`d${i % 5}/f${i}.txt`, `${i}:`.padEnd(size, String.fromCharCode(97 + (i % 26)))]),
    );

  it.skipIf(skip)(
    'a large file that became a link after the scan is not read through it: with --strict the push stops, naming it',
    async () => {
      const w = world();
      const src = join(w.base, 'src');
      writeTree(src, { 'large.bin': Buffer.alloc(1024 * 1024 + 1, 'L') });
      const change = () => (rmSync(join(src, 'large.bin')), symlinkSync('/etc/hostname', join(src, 'large.bin')));
      await expect(pushChanging(w.target(src), await w.deps(), change)).rejects.toThrow(
        /large\.bin is a symbolic link now: it changed while it was being pushed; nothing was published/,
      );
    },
    30_000,
  );

  it.skipIf(skip)(
    'pulls from a server that ignores Range, and past a ranged answer cut off midway',
    async () => {
      const w = world();
      const src = join(w.base, 'src');
      writeTree(src, files(40, 3000));
      await syncPush(w.target(src), await w.deps());
      proxy!.mode = 'ignore-range';
      const whole = join(w.base, 'whole');
      expect((await syncPull(w.target(whole), await w.deps(), {})).stats.files_downloaded).toBe(40);
      expect(readTree(whole)).toEqual(readTree(src));
      proxy!.mode = 'cut-range';
      const failed = proxy!.failed;
      const cut = join(w.base, 'cut');
      expect((await syncPull(w.target(cut), await w.deps(), {})).stats.files_downloaded).toBe(40);
      expect(readTree(cut)).toEqual(readTree(src));
      expect(proxy!.failed).toBe(failed + 1);
    },
    30_000,
  );

  it.skipIf(skip)(
    'a push run again after one failed at its manifest finds the packs it had sent: a large pack is asked about and not sent, a small one is sent again',
    async () => {
      const w = world();
      const src = join(w.base, 'src');
      writeTree(src, { ...files(420, 10_240), 'small/a.txt': 'alpha' });
      proxy!.mode = 'deny-state-put';
      await expect(syncPush(w.target(src), await w.deps())).rejects.toThrow(/access denied to .*\.sandbox-state/);
      proxy!.mode = 'pass';
      const again = await syncPush(w.target(src), await w.deps());
      // 421 contents: a pack of 4 MiB (410 of them, found), and a last one under 1 MiB (sent again, unasked).
      expect(again.stats).toMatchObject({ files_uploaded: 11, files_reused: 410 });
      // What pruning asks before it removes a pack it took apart: when it was last made young.
      const store = (await w.deps()).store;
      const listed = await store.listBlobs('ws');
      expect(listed.size).toBe(2);
      for (const [name, blob] of listed) expect(await store.blobModifiedMs('ws', name)).toBe(blob.modifiedMs);
      expect(await store.blobModifiedMs('ws', 'f'.repeat(64))).toBeUndefined();
      const dest = join(w.base, 'dest');
      await syncPull(w.target(dest), await w.deps(), {});
      expect(readTree(dest)).toEqual(readTree(src));
    },
    30_000,
  );
});

// A prune racing a push cannot lose the newest version (issue 36). Two machines (two folders, two
// homes) on one store: machine 2's push reuses a 3 MB content the store still holds but that only
// an old version references (a copy of a file machine 1 deleted since); machine 1's `prune --keep 1`
// removes that old version. The prune starts when the push's first object lands (seen by watching
// the store's blobs), and the push publishes only once the prune has ended. Every blob counts as
// old to the prune (its store clock two hours ahead), as it would an hour after it was sent, and
// as on s3rver, whose copy that "makes it young" keeps its LastModified. Before the fix the prune
// collected the content and the newest version named a missing blob; now the prune sees the
// push's lease and removes nothing, and a prune after the push keeps what the push named.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import { motoMissing, startMoto } from './helpers/moto.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ONLY_ENV, startS3rver } from './helpers/s3rver.js';
import { configWith, depsFor, readTree, removeScratch, scratch, storeWith, writeTree } from './helpers/sync-fixtures.js';
import { pruneDuringPush, RACE_BIG, RACE_T } from './helpers/sync-stress.js';

let s3rver: S3Server | undefined;
let moto: S3Server | undefined;
const savedEnv = { ...process.env };
beforeAll(async () => {
  s3rver = await startS3rver('atlas-race');
  if (!motoMissing()) moto = await startMoto('atlas-race');
  Object.assign(process.env, S3RVER_ONLY_ENV);
}, 60_000);
afterAll(async () => {
  process.env = savedEnv;
  await s3rver?.stop();
  await moto?.stop();
  removeScratch();
});

const T = RACE_T;

describe.each(['dir', 's3rver', 'moto'] as const)('a prune during a push (%s store)', (kind) => {
  it.skipIf(kind === 'moto' && motoMissing())(
    'the newest version keeps every content it names',
    async () => {
      const base = scratch('atlas-race-');
      const server = kind === 's3rver' ? s3rver! : moto;
      const config =
        kind === 'dir'
          ? configWith({ store: join(base, 'store') })
          : configWith({ store: `s3://${server!.bucket}/race`, s3: { endpoint: server!.endpoint, force_path_style: true } });
      const { pushed, pruned, one, target, a, old } = await pruneDuringPush(config, base);
      expect(pruned).toBeDefined();
      expect(pushed.stats.files_reused).toBeGreaterThan(0);

      const { versions } = await syncVersions(target(a), await one(T + 40));
      expect(versions.map((v) => v.status)).toEqual(versions.map(() => 'complete'));
      const fresh = join(base, 'fresh');
      await syncPull(target(fresh), await one(T + 41), {});
      expect(readTree(fresh)).toEqual({ copy: RACE_BIG.toString(), n: 'new on two', s: 'small', t: 'new on one' });
      const prune = (await pruned) as Awaited<ReturnType<typeof syncPrune>>;
      expect(prune.removed.versions).toBe(0);
      expect(prune.trees[0]!.blobs.skipped).toMatch(/a push of ws is under way/);
      // A prune once the push ended removes the old version, and keeps the content the newest names.
      const later = await syncPrune(target(a), await one(T + 50, { storeNow: old }), { keep: 1 });
      expect(later.removed.versions).toBeGreaterThan(0);
      const again = join(base, 'again');
      await syncPull(target(again), await one(T + 51), {});
      expect(readTree(again).copy).toBe(RACE_BIG.toString());
    },
    120_000,
  );
});

describe('leases and prune locks (folder store)', () => {
  it('a push waits for a prune lock to go, saying so once; a lease this process could not remove holds up no prune of its own; a failed look releases the lease', async () => {
    const base = scratch('atlas-locks-');
    const config = configWith({ store: join(base, 'store') });
    const target: SyncTarget = { root: join(base, 'ws'), tree: 'ws', workspace: 'ws' };
    writeTree(target.root, { 'a.txt': 'a' });
    const deps = await depsFor(config, join(base, 'home'), () => T * 1000);
    await deps.store.putLock('ws', 'prune-0123456789abcdef');
    let told: () => void = () => undefined;
    const waiting = new Promise<void>((ok) => (told = ok));
    const pushed = syncPush(target, { ...deps, warn: (text) => (deps.warn(text), /waiting for a prune/.test(text) && told()) });
    await waiting;
    await deps.store.removeLock('ws', 'prune-0123456789abcdef');
    expect((await pushed).stats.version).toBe(String(T));
    expect(deps.warnings.filter((w) => /waiting for a prune of ws to end \(prune-0123456789abcdef\)/.test(w))).toHaveLength(1);
    expect(await deps.store.listLocks('ws')).toEqual([]);

    // A store that refuses to remove the lease: this process's own prune is not held up by it.
    writeTree(target.root, { 'a.txt': 'a2' });
    const stuck = storeWith(deps.store, { removeLock: async () => Promise.reject(new Error('refused')) });
    await syncPush(target, { ...deps, store: stuck, now: () => (T + 10) * 1000 });
    expect((await deps.store.listLocks('ws')).map((l) => l.name)).toEqual([expect.stringMatching(/^push-/)]);
    const pruned = await syncPrune(target, { ...deps, now: () => (T + 20) * 1000 }, { keep: 1 });
    expect(pruned.removed.versions).toBe(1);

    // Looking for prunes fails: the push fails, and its lease is removed.
    for (const l of await deps.store.listLocks('ws')) await deps.store.removeLock('ws', l.name);
    writeTree(target.root, { 'a.txt': 'a3' });
    const blind = storeWith(deps.store, { listLocks: async () => Promise.reject(new Error('cannot list')) });
    await expect(syncPush(target, { ...deps, store: blind, now: () => (T + 30) * 1000 })).rejects.toThrow(/cannot list/);
    expect(await deps.store.listLocks('ws')).toEqual([]);
  });
});

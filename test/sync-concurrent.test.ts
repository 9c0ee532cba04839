// Concurrent pushes (issue 20, the third wave's "no concurrent push may lose work"): two machines
// push the same tree at the same time, each having listed the store before the other published.
// Whichever order their versions are named and written in, once both pushes return the newest
// version holds both machines' changes; the same file changed by both is a conflict (exit 6) that
// leaves theirs in the newest and ours in a version of its own. The race is made deterministic by
// running B's whole push inside A's `beforePublish` (after A listed and sent, before it publishes).
// On the folder store, and on moto's S3 (which honours `If-None-Match: *`, so two pushes that pick
// the same version name never overwrite each other).
import { join } from 'node:path';
import { text as joinText } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtlasError, EXIT } from '../src/domain/errors.js';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { motoMissing, startMoto } from './helpers/moto.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ENV } from './helpers/s3rver.js';
import { configWith, depsFor, readTree, removeScratch, scratch, storeWith, writeTree } from './helpers/sync-fixtures.js';

let moto: S3Server | undefined;
const savedEnv = { ...process.env };
beforeAll(async () => {
  if (!motoMissing()) moto = await startMoto('atlas-concurrent');
  Object.assign(process.env, S3RVER_ENV, {
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    AWS_CONFIG_FILE: '/nonexistent',
  });
}, 40_000);
afterAll(async () => {
  process.env = savedEnv;
  await moto?.stop();
  removeScratch();
});

// A fixed "now" (unix seconds) for each machine, so the names are known; in the past, so that every
// file the test writes is newer than the last sync and is hashed again.
const T = 1_700_000_000;

let prefixes = 0;
/** Two machines, A and B, on one store, both at a first version named T - 100. */
async function twoMachines(kind: 'dir' | 'moto', files: Record<string, string>) {
  const base = scratch('atlas-concurrent-');
  const config =
    kind === 'dir'
      ? configWith({ store: join(base, 'store') })
      : configWith({ store: `s3://${moto!.bucket}/c${++prefixes}`, s3: { endpoint: moto!.endpoint, force_path_style: true } });
  const deps = (nowSeconds: number, beforePublish?: () => Promise<void>) =>
    depsFor(config, join(base, 'home'), () => nowSeconds * 1000).then((d) => ({ ...d, ...(beforePublish ? { beforePublish } : {}) }));
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const a = join(base, 'a');
  const b = join(base, 'b');
  writeTree(a, files);
  await syncPush(target(a), await deps(T - 100));
  await syncPull(target(b), await deps(T - 100), {});
  const push = async (root: string, nowSeconds: number, beforePublish?: () => Promise<void>) =>
    syncPush(target(root), await deps(nowSeconds, beforePublish));
  const newest = async () => {
    const fresh = join(base, `fresh-${Math.random().toString(36).slice(2)}`);
    await syncPull(target(fresh), await deps(T + 1000), {});
    return readTree(fresh);
  };
  const versions = async () => (await syncVersions(target(a), await deps(T))).versions;
  return { a, b, push, newest, versions, deps, target };
}

/** B's whole push, run by A's fence the first time it is asked (it is asked again before a combination). */
function once(run: () => Promise<unknown>): () => Promise<void> {
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    await run();
  };
}

const kinds = ['dir', 'moto'] as const;
describe.each(kinds)('concurrent pushes (%s store)', (kind) => {
  const skip = kind === 'moto' && motoMissing();
  // A names its version by its clock, B by its own; B publishes while A is between listing and publishing.
  const cases = [
    { name: 'the same second: both pick the same name', a: T, b: T },
    { name: 'A names its version older than B but publishes after it', a: T, b: T + 5 },
    { name: 'A names its version newer than B and publishes after it', a: T + 5, b: T },
  ];
  for (const c of cases) {
    it.skipIf(skip)(`different files changed, ${c.name}: the newest version holds both, and the next pushes keep them`, async () => {
      const m = await twoMachines(kind, { 'a.txt': 'a1', 'b.txt': 'b1', 'c.txt': 'c1' });
      writeTree(m.a, { 'a.txt': 'a2' });
      writeTree(m.b, { 'b.txt': 'b2' });
      const fromA = await m.push(
        m.a,
        c.a,
        once(() => m.push(m.b, c.b)),
      );
      expect(await m.newest()).toEqual({ 'a.txt': 'a2', 'b.txt': 'b2', 'c.txt': 'c1' });
      expect(fromA.stats.notes.join(' ')).toMatch(/published version \d+ while this push ran/);
      // Each machine's next push (another change) keeps the other's work.
      writeTree(m.b, { 'c.txt': 'c-from-b' });
      await m.push(m.b, c.b + 20);
      expect(await m.newest()).toEqual({ 'a.txt': 'a2', 'b.txt': 'b2', 'c.txt': 'c-from-b' });
      writeTree(m.a, { 'a.txt': 'a3' });
      await m.push(m.a, c.a + 40);
      expect(await m.newest()).toEqual({ 'a.txt': 'a3', 'b.txt': 'b2', 'c.txt': 'c-from-b' });
      for (const v of await m.versions()) expect(v.status).not.toBe('damaged');
    });
  }

  it.skipIf(skip)(
    'the same file changed by both at the same time: exit 6, the newest keeps theirs, ours is kept in a version of its own',
    async () => {
      const m = await twoMachines(kind, { 'shared.txt': 'v1', 'a.txt': 'a1', 'b.txt': 'b1' });
      writeTree(m.a, { 'shared.txt': 'from A', 'a.txt': 'a2' });
      writeTree(m.b, { 'shared.txt': 'from B', 'b.txt': 'b2' });
      const error = await m
        .push(
          m.a,
          T + 5,
          once(() => m.push(m.b, T)),
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(AtlasError);
      expect((error as AtlasError).exitCode).toBe(EXIT.conflict);
      expect((error as AtlasError).message).toMatch(/published version \d+ while this push ran.*shared\.txt/s);
      // The newest: B's shared.txt (it was there first), and A's other change combined in.
      expect(await m.newest()).toEqual({ 'shared.txt': 'from B', 'a.txt': 'a2', 'b.txt': 'b2' });
      // A's own version is kept and named.
      const named = /version (\d+) keeps this push's/.exec((error as AtlasError).message)?.[1];
      expect(named).toBeDefined();
      const fresh = scratch('atlas-concurrent-named-');
      await syncPull(m.target(fresh), await m.deps(T + 1000), { version: named! });
      expect(readTree(fresh)['shared.txt']).toBe('from A');
      // A's next push is still a conflict (nothing of its own was taken for the store's), until --force.
      await expect(m.push(m.a, T + 50)).rejects.toMatchObject({ exitCode: EXIT.conflict });
    },
  );

  it.skipIf(skip)(
    'a push killed between publishing and combining: the next push of the other machine compares from the version both hold',
    async () => {
      const m = await twoMachines(kind, { 'a.txt': 'a1', 'b.txt': 'b1' });
      writeTree(m.a, { 'a.txt': 'a2' });
      writeTree(m.b, { 'b.txt': 'b2' });
      // B lists, then A pushes whole, then B publishes (built on the first version, without a2) and is
      // killed before it looks again: its store stops answering after its version is written. (B's
      // second listing checks, under its lease, that the version it builds on is still there.)
      const depsB = await m.deps(
        T + 5,
        once(() => m.push(m.a, T)),
      );
      let listings = 0;
      const killed = storeWith(depsB.store, {
        listVersionNames: async (tree) => (++listings > 2 ? Promise.reject(new Error('killed')) : depsB.store.listVersionNames(tree)),
      });
      await expect(syncPush(m.target(m.b), { ...depsB, store: killed })).rejects.toThrow(/killed/);
      expect(await m.newest()).toEqual({ 'a.txt': 'a1', 'b.txt': 'b2' });
      // A's next push: the newest was built on the first version, so A's a2 is not taken for reverted.
      writeTree(m.a, { 'c.txt': 'c' });
      const next = await m.push(m.a, T + 50);
      expect(next.stats.notes.join(' ')).toMatch(/combined with its 1 change/);
      expect(await m.newest()).toEqual({ 'a.txt': 'a2', 'b.txt': 'b2', 'c.txt': 'c' });
    },
  );

  it.skipIf(skip)('a server turn that lost its lease publishes no combination: the fence is asked again before it', async () => {
    const m = await twoMachines(kind, { 'a.txt': 'a1', 'b.txt': 'b1' });
    writeTree(m.a, { 'a.txt': 'a2' });
    writeTree(m.b, { 'b.txt': 'b2' });
    let asked = 0;
    const pushed = m.push(m.a, T + 5, async () => {
      if (++asked === 1) await m.push(m.b, T);
      else throw new Error('the lease was taken over');
    });
    await expect(pushed).rejects.toThrow(/lease was taken over/);
    expect(asked).toBe(2);
    // A's own version (fenced while it held the lease) is the newest; nothing after it.
    const versions = (await m.versions()).map((v) => v.version);
    expect(versions.at(-1)).toBe(String(T + 5));
  });

  it.skipIf(skip)(
    'without the version both were built on (removed), a file both hold differently is a conflict, never a silent pick',
    async () => {
      const m = await twoMachines(kind, { 'a.txt': 'a1', 'b.txt': 'b1' });
      writeTree(m.a, { 'a.txt': 'a2' });
      writeTree(m.b, { 'b.txt': 'b2' });
      const depsA = await m.deps(
        T + 5,
        once(() => m.push(m.b, T)),
      );
      // The first version reads as gone once A has listed and sent (as if retention removed it).
      let gone = false;
      const store = storeWith(depsA.store, {
        readState: async (tree, version) => (gone && version === String(T - 100) ? undefined : depsA.store.readState(tree, version)),
      });
      const fence = depsA.beforePublish!;
      const error = await syncPush(m.target(m.a), {
        ...depsA,
        store,
        beforePublish: async () => {
          gone = true;
          return fence();
        },
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as AtlasError).exitCode).toBe(EXIT.conflict);
      expect((error as AtlasError).message).toMatch(/a\.txt/);
      expect(await m.newest()).toEqual({ 'a.txt': 'a1', 'b.txt': 'b2' });
    },
  );

  it.skipIf(skip)('--force: the same file changed by both keeps ours in the newest, with every other change combined', async () => {
    const m = await twoMachines(kind, { 'shared.txt': 'v1', 'a.txt': 'a1', 'b.txt': 'b1' });
    writeTree(m.a, { 'shared.txt': 'from A', 'a.txt': 'a2' });
    writeTree(m.b, { 'shared.txt': 'from B', 'b.txt': 'b2' });
    const depsA = await m.deps(
      T + 5,
      once(() => m.push(m.b, T)),
    );
    const pushed = await syncPush(m.target(m.a), depsA, { force: true });
    expect(pushed.stats.notes.join(' ')).toMatch(
      /--force: 1 file\(s\) changed by both pushes were published as they are here: shared\.txt/,
    );
    expect(await m.newest()).toEqual({ 'shared.txt': 'from A', 'a.txt': 'a2', 'b.txt': 'b2' });
  });

  it.skipIf(skip)('a store where every name is taken: the push gives up after five tries, saying so, and publishes nothing', async () => {
    const m = await twoMachines(kind, { 'a.txt': 'a1' });
    writeTree(m.a, { 'a.txt': 'a2' });
    const depsA = await m.deps(T);
    let tries = 0;
    const store = storeWith(depsA.store, { commitVersion: async () => (tries++, false) });
    await expect(syncPush(m.target(m.a), { ...depsA, store })).rejects.toMatchObject({
      exitCode: EXIT.failure,
      message: expect.stringMatching(/other pushes kept publishing/),
      hint: 'push again',
    });
    expect(tries).toBe(5);
    expect(await m.newest()).toEqual({ 'a.txt': 'a1' });
  });

  it.skipIf(skip)('when the other push already holds every change of this one, nothing more is published', async () => {
    const m = await twoMachines(kind, { 'a.txt': 'a1' });
    writeTree(m.a, { 'a.txt': 'the same' });
    writeTree(m.b, { 'a.txt': 'the same' });
    const pushed = await m.push(
      m.a,
      T,
      once(() => m.push(m.b, T + 5)),
    );
    expect(pushed.stats.version).toBe(String(T + 5));
    expect((await m.versions()).map((v) => v.version)).toEqual([String(T - 100), String(T), String(T + 5)]);
    expect(await m.newest()).toEqual({ 'a.txt': 'the same' });
  });

  it.skipIf(skip)('a manifest names the version it was built on (parent)', async () => {
    const m = await twoMachines(kind, { 'a.txt': 'a1' });
    writeTree(m.a, { 'a.txt': 'a2' });
    const pushed = await m.push(m.a, T);
    const { store } = await m.deps(T);
    const parsed = parseWhole(await joinText((await store.readState('ws', pushed.stats.version!))!));
    expect(parsed.ok && parsed.state.parent).toBe(String(T - 100));
    // `atlas sync versions` says it too; the first version was built on nothing.
    expect((await m.versions()).map((v) => [v.version, v.parent])).toEqual([
      [String(T - 100), undefined],
      [String(T), String(T - 100)],
    ]);
  });
});

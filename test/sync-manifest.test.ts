// Manifests that name unchanged contents by reference to an earlier full manifest (`sha256_from`):
// every entry keeps the seed's fields, only the SHA-256 of an unchanged file is left to the base;
// reading resolves them (pull, an older version, export, versions), a hostile or broken reference
// makes the version damaged, retention keeps a base a kept version needs, and garbage collection
// never removes what such a version uses. Folder stores in temp dirs, and s3rver on 127.0.0.1.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { text as joinText } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planReferences, REFER_FROM, resolveReferences } from '../src/domain/sync-manifest.js';
import type { FileEntry, StateFile } from '../src/domain/sync-state.js';
import { serializeState, stateChunks } from '../src/domain/sync-state.js';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import { manifestBody, manifestChunks } from '../src/sync/stores/s3-manifest.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncExport } from '../src/sync/transfer/export.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import type { S3Server } from './helpers/s3rver.js';
import { S3RVER_ENV, startS3rver } from './helpers/s3rver.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const entry = (path: string, body: string): FileEntry => ({
  path,
  checksum: md5(body),
  size: body.length,
  modified_at: 1_700_000_000,
  sha256: sha(body),
  mode: 0o644,
});
const many = (n: number, tag = '') => Array.from({ length: n }, (_, i) => entry(`d${i % 7}/f${i}.txt`, `file ${i}${tag}`));

describe('references (pure)', () => {
  it('refers to the base when few entries changed, in full otherwise; small trees always in full', () => {
    const base: StateFile = { version: '1.0', last_synced_at: 1, files: many(REFER_FROM + 44) };
    const latest = { version: '100', state: base };
    const now = base.files.map((f, i) => (i % 50 === 0 ? entry(f.path, `changed ${i}`) : f));
    const plan = planReferences(now, latest)!;
    expect(plan.base).toBe('100');
    expect(now.filter((f) => !plan.omit(f)).map((f) => f.path)).toEqual(now.filter((_, i) => i % 50 === 0).map((f) => f.path));
    // A fifth changed is the limit; past it, this version is written whole and becomes the next base.
    expect(
      planReferences(
        now.map((f, i) => (i % 4 === 0 ? entry(f.path, `x${i}`) : f)),
        latest,
      ),
    ).toBeUndefined();
    expect(planReferences(many(REFER_FROM - 1), { version: '100', state: { ...base, files: many(REFER_FROM - 1) } })).toBeUndefined();
    expect(planReferences(now, undefined)).toBeUndefined();
  });

  it('the next push refers to the same base, never to a manifest that refers itself', () => {
    const files = many(300);
    const changed = entry(files[0]!.path, 'new');
    // Version 200 as stored: it carries the changed file's SHA-256 and leaves the rest to 100.
    const stored: StateFile = { version: '1.0', last_synced_at: 2, sha256_from: '100', files: [changed, ...files.slice(1)] };
    const parsed = parseWhole(serializeState(stored, (f) => f !== changed));
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.state.files.filter((f) => f.sha256 !== undefined)).toHaveLength(1);
    const resolved = resolveReferences(parsed.state, '200', { version: '1.0', last_synced_at: 1, files });
    expect(resolved.ok).toBe(true);
    if (!resolved.ok) return;
    expect(resolved.state.files.map((f) => f.sha256)).toEqual(
      [changed, ...files.slice(1)].sort((a, b) => (a.path < b.path ? -1 : 1)).map((f) => f.sha256),
    );
    expect(resolved.state.sha256_from).toBeUndefined();
    const plan = planReferences(resolved.state.files, {
      version: '200',
      state: resolved.state,
      references: { base: '100', byReference: resolved.byReference },
    })!;
    expect(plan.base).toBe('100');
    // Version 100 does not hold the changed content: it stays carried.
    expect(resolved.state.files.filter((f) => !plan.omit(f)).map((f) => f.path)).toEqual([changed.path]);
  });

  it('refuses a reference to a newer version or to a manifest that refers itself, and an entry the base does not hold', () => {
    const files = many(3);
    const stripped = (): StateFile => ({
      version: '1.0',
      last_synced_at: 2,
      sha256_from: '100',
      files: files.map(({ sha256: _drop, ...f }) => f),
    });
    const base: StateFile = { version: '1.0', last_synced_at: 1, files };
    expect(resolveReferences(stripped(), '50', base)).toMatchObject({ ok: false, problem: expect.stringMatching(/not older/) });
    expect(resolveReferences(stripped(), '100', base)).toMatchObject({ ok: false, problem: expect.stringMatching(/not older/) });
    expect(resolveReferences(stripped(), '200', { ...base, sha256_from: '90' })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/itself refers to 90/),
    });
    const other = stripped();
    other.files[1] = { ...other.files[1]!, checksum: md5('something else') };
    expect(resolveReferences(other, '200', base)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/files\[1\].*no content of that MD5 and size/),
    });
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"sha256_from":"../x","files":[]}')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/sha256_from/),
    });
  });
});

describe('writing a state in pieces', () => {
  it('gives the same JSON whole or in pieces, past 64 KB; a parsed entry keeps only known fields when written again', async () => {
    const state: StateFile = { version: '1.0', last_synced_at: 5, files: many(2000), dirs: ['z', 'a'] };
    const chunks = [...stateChunks(state)];
    expect(chunks.length).toBeGreaterThan(2);
    const text = chunks.join('');
    expect(text).toBe(serializeState(state));
    expect(JSON.parse(text)).toEqual({ ...state, files: [...state.files].sort((a, b) => (a.path < b.path ? -1 : 1)), dirs: ['a', 'z'] });
    const parsed = parseWhole(
      `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"${md5('a')}","size":1,"modified_at":2,"note":"x"}],"extra":true}`,
    );
    expect(parsed.ok && serializeState(parsed.state)).toBe(
      `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"${md5('a')}","size":1,"modified_at":2}]}\n`,
    );
  });

  it('sends a small manifest as it is and a large one gzipped, compressed as its pieces come', async () => {
    expect(await manifestBody(['{"version":"1.0",', '"files":[]}'])).toEqual({
      bytes: Buffer.from('{"version":"1.0","files":[]}'),
      gzip: false,
    });
    const chunks = [...stateChunks({ version: '1.0', last_synced_at: 5, files: many(2000) })];
    const body = await manifestBody(chunks);
    expect(body.gzip).toBe(true);
    expect(body.bytes.length).toBeLessThan(chunks.join('').length / 2);
    expect(await joinText(manifestChunks(body.bytes))).toBe(chunks.join(''));
  });

  it('reads a manifest as it arrives, in pieces of any size, gzipped or not, and fails (never stalls) when the download breaks', async () => {
    const text = [
      ...stateChunks({
        version: '1.0',
        last_synced_at: 5,
        files: [...many(2000), { path: 'é/ü/漢字.txt', checksum: md5('x'), size: 1, modified_at: 2 }],
      }),
    ].join('');
    const zipped = (await manifestBody([text])).bytes;
    /** `bytes` as a download would bring them: a first piece of one byte (the magic split), then pieces of `size`. */
    const arriving = (bytes: Buffer, size: number, failAt = Infinity) =>
      (async function* () {
        for (let at = 0, step = 1; at < bytes.length; at += step, step = size) {
          if (at >= failAt) throw new Error('socket hang up');
          yield new Uint8Array(bytes.subarray(at, at + step));
        }
      })();
    for (const size of [7, 4096]) {
      expect(await joinText(manifestChunks(arriving(zipped, size)))).toBe(text);
      expect(await joinText(manifestChunks(arriving(Buffer.from(text), size)))).toBe(text);
    }
    await expect(joinText(manifestChunks(arriving(zipped, 1024, zipped.length / 2)))).rejects.toThrow('socket hang up');
    await expect(joinText(manifestChunks(arriving(Buffer.from(text), 1024, 5000)))).rejects.toThrow('socket hang up');
    // A reader that stops early lets go of the download.
    let closed = false;
    const source = (async function* () {
      try {
        yield* arriving(zipped, 512);
      } finally {
        closed = true;
      }
    })();
    for await (const piece of manifestChunks(source)) if (piece.length > 0) break;
    for (let waited = 0; !closed && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(true);
    expect(await joinText(manifestChunks(arriving(Buffer.alloc(0), 1)))).toBe('');
    // A text cut inside a character ends in U+FFFD (the parse then calls it corrupt), never in a stall.
    expect(await joinText(manifestChunks(arriving(Buffer.from('{"é').subarray(0, 3), 1)))).toBe('{"\uFFFD');
    // A store's zip bomb stops at the limit.
    const bomb = (await manifestBody([' '.repeat(200_000)])).bytes;
    await expect(joinText(manifestChunks(arriving(bomb, 1024), 100_000))).rejects.toThrow(
      'the manifest inflates to more than 100000 bytes',
    );
  });
});

afterAll(() => removeScratch());
const T0 = 1_700_000_000;

/** 300 files in a folder store (or an S3 prefix), pushed at T0 as the base. */
async function world(store?: string, config = configWith({ store: store ?? join(scratch('atlas-refs-'), 'store') })) {
  const src = scratch();
  const home = scratch();
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const deps = (seconds: number) => depsFor(config, home, () => seconds * 1000);
  const files = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d${i % 10}/f${i}.txt`, `content ${i}`]));
  writeTree(src, files);
  const first = await syncPush(target(src), await deps(T0));
  const change = (paths: string[], tag: string) => {
    for (const p of paths) writeFileSync(join(src, p), `${tag} ${p}`);
    // The scan trusts a recorded hash only for an mtime before the last sync: these are later.
    for (const p of paths) utimesSync(join(src, p), new Date(), new Date(Date.now() + 5000));
  };
  return { src, home, config, target, deps, first, change, files };
}

const manifestIn = (store: string, version: string) =>
  JSON.parse(readFileSync(join(store, 'ws', version, '.sandbox-state'), 'utf8')) as StateFile;

describe('references (folder store)', () => {
  it('a push after few changes stores every entry with the seed fields, carrying only the changed SHA-256s; every version pulls whole', async () => {
    const store = join(scratch('atlas-refs-'), 'store');
    const w = await world(store);
    w.change(['d0/f0.txt', 'd3/f13.txt'], 'second');
    const second = await syncPush(w.target(w.src), await w.deps(T0 + 10));
    const m = manifestIn(store, second.stats.version!);
    expect(m.sha256_from).toBe(String(T0));
    expect(m.files).toHaveLength(300);
    for (const f of m.files) expect(Object.keys(f).slice(0, 4)).toEqual(['path', 'checksum', 'size', 'modified_at']);
    expect(
      m.files
        .filter((f) => f.sha256 !== undefined)
        .map((f) => f.path)
        .sort(),
    ).toEqual(['d0/f0.txt', 'd3/f13.txt']);
    // The third push refers to the same base (depth one), carrying what changed since it.
    w.change(['d5/f5.txt'], 'third');
    const third = await syncPush(w.target(w.src), await w.deps(T0 + 20));
    const m3 = manifestIn(store, third.stats.version!);
    expect(m3.sha256_from).toBe(String(T0));
    expect(
      m3.files
        .filter((f) => f.sha256 !== undefined)
        .map((f) => f.path)
        .sort(),
    ).toEqual(['d0/f0.txt', 'd3/f13.txt', 'd5/f5.txt']);
    const dest = scratch();
    await syncPull(w.target(dest), await w.deps(T0 + 30), {});
    expect(readTree(dest)).toEqual(readTree(w.src));
    const older = await syncPull(w.target(dest), await w.deps(T0 + 31), { version: second.stats.version! });
    expect(older.stats).toMatchObject({ files_downloaded: 1 });
    expect(readFileSync(join(dest, 'd5/f5.txt'), 'utf8')).toBe('content 5');
    const exported = join(scratch(), 'out');
    await syncExport(w.target(w.src), await w.deps(T0 + 32), { version: second.stats.version!, dest: exported });
    expect(readFileSync(join(exported, 'd3/f13.txt'), 'utf8')).toBe('second d3/f13.txt');
    expect((await syncVersions(w.target(w.src), await w.deps(T0 + 33))).versions.map((v) => [v.status, v.files])).toEqual([
      ['complete', 300],
      ['complete', 300],
      ['complete', 300],
    ]);
    // More than a fifth changed since the base: a full manifest, the next base.
    w.change(Object.keys(w.files).slice(0, 80), 'fourth');
    const fourth = await syncPush(w.target(w.src), await w.deps(T0 + 40));
    const m4 = manifestIn(store, fourth.stats.version!);
    expect(m4.sha256_from).toBeUndefined();
    expect(m4.files.every((f) => f.sha256 !== undefined)).toBe(true);
  });

  it('retention keeps the base of a kept version, and collection keeps its contents; a version whose base is gone is damaged', async () => {
    const store = join(scratch('atlas-refs-'), 'store');
    const w = await world(store);
    w.change(['d1/f1.txt'], 'second');
    const second = await syncPush(w.target(w.src), await w.deps(T0 + 10));
    // Every content past the grace period: collection removes whatever no remaining manifest uses.
    const area = join(store, 'ws', '.blobs');
    const past = new Date(Date.now() - 7200_000);
    for (const fan of readdirSync(area)) for (const name of readdirSync(join(area, fan))) utimesSync(join(area, fan, name), past, past);
    const pruned = await syncPrune(w.target(w.src), await w.deps(T0 + 10_000), { keep: 1 });
    expect(pruned.trees[0]).toMatchObject({
      kept: [second.stats.version],
      removed: [],
      spared: [{ version: String(T0), reason: expect.stringMatching(/by reference/) }],
    });
    // The base's contents (the old d1/f1.txt among them) stay: version 1700000000 still uses it.
    expect(pruned.trees[0]!.blobs).toMatchObject({ removed: 0 });
    const dest = scratch();
    await syncPull(w.target(dest), await w.deps(T0 + 10_001), {});
    expect(readTree(dest)).toEqual(readTree(w.src));
    await syncPull(w.target(dest), await w.deps(T0 + 10_001), { version: String(T0) });
    expect(readFileSync(join(dest, 'd1/f1.txt'), 'utf8')).toBe('content 1');
    // Removed behind atlas's back (an older atlas's prune, a person): the version cannot be read.
    rmSync(join(store, 'ws', String(T0)), { recursive: true });
    await expect(syncPull(w.target(scratch()), await w.deps(T0 + 10_002), {})).rejects.toThrow(
      /refers to the contents of version 1700000000, which has no \.sandbox-state/,
    );
    // Nor does it count as a version to keep: with no complete version left, nothing is removed.
    const again = await syncPrune(w.target(w.src), await w.deps(T0 + 10_003), { keep: 1 });
    expect(again.trees[0]).toMatchObject({ kept: [], removed: [] });
    expect(again.trees[0]!.blobs).toMatchObject({
      removed: 0,
      skipped: expect.stringMatching(/by reference to version 1700000000, which is gone/),
    });
    expect(readdirSync(join(store, 'ws', '.blobs')).length).toBeGreaterThan(0);
  });
});

describe('references behind the store (folder store)', () => {
  it('a conflict version refers to the same base; retention keeps that base, and the conflict version pulls by name', async () => {
    const store = join(scratch('atlas-refs-'), 'store');
    const w = await world(store);
    const other = scratch();
    await syncPull(w.target(other), await w.deps(T0 + 5), {});
    w.change(['d4/f4.txt'], 'from A');
    const fromA = await syncPush(w.target(w.src), await w.deps(T0 + 10));
    writeFileSync(join(other, 'd4/f4.txt'), 'from B');
    utimesSync(join(other, 'd4/f4.txt'), new Date(), new Date(Date.now() + 5000));
    await expect(syncPush(w.target(other), await w.deps(T0 + 20))).rejects.toMatchObject({ exitCode: 6 });
    const conflict = manifestIn(store, String(T0 + 20));
    expect(conflict).toMatchObject({ sha256_from: String(T0), conflict_of: fromA.stats.version, conflicts: ['d4/f4.txt'] });
    const pruned = await syncPrune(w.target(w.src), await w.deps(T0 + 30), { keep: 1 });
    expect(pruned.trees[0]).toMatchObject({ kept: [fromA.stats.version], removed: [], spared: [{ version: String(T0) }] });
    const mine = scratch();
    await syncPull(w.target(mine), await w.deps(T0 + 40), { version: String(T0 + 20) });
    expect(readFileSync(join(mine, 'd4/f4.txt'), 'utf8')).toBe('from B');
    expect(readFileSync(join(mine, 'd6/f6.txt'), 'utf8')).toBe('content 6');
  });
});

describe('references (S3, s3rver)', () => {
  let server: S3Server;
  const saved = { ...process.env };
  beforeAll(async () => {
    Object.assign(process.env, S3RVER_ENV, { AWS_EC2_METADATA_DISABLED: 'true' });
    server = await startS3rver('atlas-refs');
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
    process.env = saved;
  });

  it('stores the referring manifest gzipped, and a fresh folder pulls it whole', async () => {
    const config = configWith({ store: `s3://${server.bucket}/refs`, s3: { endpoint: server.endpoint, force_path_style: true } });
    const w = await world(undefined, config);
    w.change(['d2/f2.txt'], 'second');
    const second = await syncPush(w.target(w.src), await w.deps(T0 + 10));
    const { GetObjectCommand, S3Client } = await import('@aws-sdk/client-s3');
    const client = new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true });
    const got = await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: `refs/ws/${second.stats.version}/.sandbox-state` }));
    const m = JSON.parse(await joinText(manifestChunks(Buffer.from(await got.Body!.transformToByteArray())))) as StateFile;
    client.destroy();
    expect(m).toMatchObject({ sha256_from: String(T0) });
    expect(m.files.filter((f) => f.sha256 !== undefined)).toHaveLength(1);
    const dest = scratch();
    mkdirSync(dest, { recursive: true });
    await syncPull(w.target(dest), await w.deps(T0 + 20), {});
    expect(readTree(dest)).toEqual(readTree(w.src));
  }, 60_000);
});

describe('retention and hostile empty folders', () => {
  it('a version listing an empty folder atlas refuses to write is damaged for retention too, as for a pull', async () => {
    const { versionCondition } = await import('../src/sync/versions/versions.js');
    const { DirectoryStore } = await import('../src/sync/stores/dir-store.js');
    const home = scratch('atlas-home-');
    const root = scratch('atlas-ws-');
    writeTree(root, { 'a.txt': 'a' });
    const config = configWith({ store: join(home, 'store') });
    const target: SyncTarget = { root, tree: 'ws', workspace: 'ws' };
    await syncPush(target, await depsFor(config, home), {});
    const version = readdirSync(join(home, 'store', 'ws')).find((n) => /^\d+$/.test(n))!;
    const store = new DirectoryStore(join(home, 'store'));
    expect((await versionCondition(store, 'ws', version)).condition).toBe('complete');
    const path = join(home, 'store', 'ws', version, '.sandbox-state');
    const state = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...state, dirs: ['../outside'] }));
    expect((await versionCondition(store, 'ws', version)).condition).toBe('damaged');
    const pulled = scratch('atlas-pull-');
    await expect(syncPull({ root: pulled, tree: 'ws', workspace: 'ws' }, await depsFor(config, home), { version })).rejects.toThrow(
      /refuses to write/,
    );
  });
});

// A version whose manifest leaves SHA-256s to a base (`sha256_from`) is resolved while the base is
// read, merged in path order, so that the base's entries are never all held beside the version's:
// the same entries, the same refusals of a base's hostile paths (before any write), and a base out
// of path order (written by hand) read whole as before. Pure checks, then a folder store in temp dirs.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ReferenceMerge, resolveReferences } from '../src/domain/sync-manifest.js';
import { confirmStandIn, isStandIn, markStandIn } from '../src/domain/sync-stand-in.js';
import type { FileEntry, StateFile } from '../src/domain/sync-state.js';
import { byPath, serializeState } from '../src/domain/sync-state.js';
import { parseStateChunks, parseWhole } from '../src/domain/sync-state-parse.js';
import { OrderedPathCheck, unsafeEntries } from '../src/domain/sync-unsafe.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const entry = (path: string, body: string, extra: Partial<FileEntry> = {}): FileEntry => ({
  path,
  checksum: md5(body),
  size: body.length,
  modified_at: 1,
  sha256: sha(body),
  ...extra,
});

/** A base of `n` entries (some in a pack), and a version over it leaving all but its changes to it. */
function pair(n: number) {
  const base = Array.from({ length: n }, (_, i) =>
    entry(`d${i % 5}/f${i}`, `body ${i}`, i % 3 === 0 ? { pack: sha('pack'), offset: i * 10 } : {}),
  ).sort(byPath);
  const version = (): StateFile => ({
    version: '1.0',
    last_synced_at: 2,
    sha256_from: '100',
    files: base.map(({ sha256: _s, pack: _p, offset: _o, ...f }, i) => (i === 4 ? entry(f.path, 'changed') : f)),
  });
  return { base, version, header: { version: '1.0', last_synced_at: 1, files: [] } as StateFile };
}

describe('a base merged as it is read (pure)', () => {
  it('resolves exactly as resolveReferences does, problems included', () => {
    const { base, version, header } = pair(40);
    const whole = resolveReferences(version(), '200', { ...header, files: base });
    const merge = new ReferenceMerge(version(), '200', new Set());
    // The version lists a link, and the base a path the version does not: both passed over.
    for (const f of [...base, entry('d4/zz-only-in-base', 'x')].sort(byPath)) merge.take(f);
    const merged = merge.finish(header);
    expect(merged).toEqual(whole);
    expect(merged.ok && merged.byReference?.size).toBe(39);
    // Without a set (a pull, an export): the same entries, nothing recorded of where they came from.
    const contents = new ReferenceMerge(version(), '200', undefined);
    for (const f of base) contents.take(f);
    expect(contents.finish(header)).toEqual({ ...whole, byReference: undefined });
    expect(merged.ok && merged.state.files.filter((f) => f.pack !== undefined)).toHaveLength(14);

    // A content the base does not hold at that path: the first such entry, in the version's order.
    const other = version();
    other.files[7] = { ...other.files[7]!, size: 99 };
    other.files[9] = { ...other.files[9]!, size: 99 };
    const bad = new ReferenceMerge(other, '200', new Set());
    for (const f of base) bad.take(f);
    expect(bad.finish(header)).toEqual(
      resolveReferences({ ...other, files: other.files.map((f) => ({ ...f })) }, '200', { ...header, files: base }),
    );
    expect(bad.finish(header)).toMatchObject({ ok: false, problem: expect.stringMatching(/^files\[7\]/) });
    // An entry past the base's last path has nothing there.
    const short = new ReferenceMerge(version(), '200', new Set());
    for (const f of base.slice(0, -1)) short.take(f);
    expect(short.finish(header)).toMatchObject({ ok: false, problem: expect.stringMatching(/^files\[39\].*no content of that MD5/) });
    // The base's own header decides first: a base that refers itself, or one not older.
    const chained = new ReferenceMerge(version(), '200', new Set());
    for (const f of base) chained.take(f);
    expect(chained.finish({ ...header, sha256_from: '90' })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/itself refers to 90/),
    });
    expect(new ReferenceMerge(version(), '100', new Set()).finish(header)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/not older/),
    });
  });

  it("holds the folder's own entry where the base makes the version's the same, and only there, on both paths", () => {
    const { base, version, header } = pair(12);
    // The folder's state: the base's entries without their places in packs (a folder's state never has them).
    const mine = base.map(({ pack: _p, offset: _o, ...f }) => ({ ...f }));
    // Two that differ from what the version resolves to: another SHA-256 (same MD5, size, time:
    // it stands in while the manifest is read, and gives way once the base is), another time.
    mine[2] = { ...mine[2]!, sha256: sha('another content') };
    mine[5] = { ...mine[5]!, modified_at: 7 };
    // Read as a pull reads it: the folder's entries by path, standing in for the version's where they can.
    const manifest = serializeState(version());
    const parsed = () => {
      const known = new Map(mine.map((f) => [f.path, { ...f }]));
      const read = parseStateChunks([manifest], { known });
      if (!read?.ok) throw new Error(read?.problem ?? 'not laid out as atlas writes it');
      return { known, state: read.state };
    };
    const plain = resolveReferences(version(), '200', { ...header, files: base });
    if (!plain.ok) throw new Error(plain.problem);
    for (const resolve of [
      (state: StateFile) => {
        const merge = new ReferenceMerge(state, '200', new Set());
        for (const f of base) merge.take(f);
        return merge.finish(header);
      },
      (state: StateFile) => resolveReferences(state, '200', { ...header, files: base }),
    ]) {
      const { known, state } = parsed();
      // While the base is unread: the folder's objects in the version's places, but for the other time.
      expect(state.files.map((f, i) => f === known.get(f.path) && i).filter((i) => i !== false)).toEqual([0, 1, 2, 3, 6, 7, 8, 9, 10, 11]);
      const merged = resolve(state);
      expect(merged).toMatchObject({ ok: true });
      if (!merged.ok || !merged.byReference) return;
      const byReference = merged.byReference;
      // The same entries as without the folder's (the base's SHA-256 and pack win over the folder's)...
      expect(merged.state.files).toEqual(plain.state.files);
      // ...held as the folder's own objects where they say the same, given the pack they are in.
      const same = merged.state.files.map((f, i) => f === known.get(f.path) && i);
      expect(same.filter((i) => i !== false)).toEqual([0, 1, 3, 6, 7, 8, 9, 10, 11]);
      expect(merged.state.files[2]!.sha256).toBe(base[2]!.sha256);
      expect(merged.state.files[2]).not.toHaveProperty('offset', expect.anything());
      expect(known.get(base[0]!.path)).toMatchObject({ pack: base[0]!.pack, offset: base[0]!.offset });
      expect(known.get(base[2]!.path)!.sha256).toBe(sha('another content'));
      // What the base gave is recorded by the object the version holds.
      expect(byReference.size).toBe(11);
      for (const f of merged.state.files) if (f.path !== merged.state.files[4]!.path) expect(byReference.has(f)).toBe(true);
    }
  });

  it('marks stand-ins by their place in their own list, and confirms one only where the base places the same content', () => {
    const files: FileEntry[] = [];
    markStandIn(files, 0);
    markStandIn(files, 5000);
    expect([0, 1, 4999, 5000].map((i) => isStandIn(files, i))).toEqual([true, false, false, true]);
    expect(isStandIn([], 0)).toBe(false);
    const held = entry('a', 'x', { pack: sha('p1'), offset: 0 });
    // Same content, same place: the folder's own object.
    expect(confirmStandIn(held, entry('a', 'x', { pack: sha('p1'), offset: 0 }))).toBe(held);
    // Same content in another pack, or loose: the version's own entry, where the base keeps it.
    expect(confirmStandIn(held, entry('a', 'x', { pack: sha('p2'), offset: 9 }))).toMatchObject({ pack: sha('p2'), offset: 9 });
    const loose = confirmStandIn(held, entry('a', 'x'));
    expect(loose).not.toBe(held);
    expect(loose).toMatchObject({ path: 'a', sha256: sha('x'), pack: undefined, offset: undefined });
    // Another MD5 or size there, or nothing: no content for it.
    expect(confirmStandIn(held, { ...entry('a', 'x'), size: 2 })).toBeUndefined();
    expect(confirmStandIn(held, undefined)).toBeUndefined();
    expect(held).toMatchObject({ pack: sha('p1'), offset: 0 });
  });

  it('refuses a version whose base lacks what a stand-in leaves to it, as without the folder', () => {
    const { base, version, header } = pair(12);
    const known = new Map(base.map(({ pack: _p, offset: _o, ...f }) => [f.path, { ...f }]));
    const read = parseStateChunks([serializeState(version())], { known });
    if (!read?.ok) throw new Error(read?.problem ?? 'not laid out as atlas writes it');
    expect(read.state.files[3]).toBe(known.get(base[3]!.path));
    // The base has another content at that path: the stand-in is no reason to take the folder's.
    const other = base.map((f, i) => (i === 3 ? entry(f.path, 'not the same') : f));
    const merge = new ReferenceMerge(read.state, '200', undefined);
    for (const f of other) merge.take(f);
    expect(merge.finish(header)).toMatchObject({ ok: false, problem: expect.stringMatching(/^files\[3\].*no content of that MD5/) });
    // Read whole (any layout), and resolved against a base read whole: the same refusal.
    const again = parseWhole(serializeState(version()), { known });
    if (!again.ok) throw new Error(again.problem);
    expect(resolveReferences(again.state, '200', { ...header, files: base.filter((_, i) => i !== 3) })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^files\[3\].*no content of that MD5/),
    });
    // A state that refers to no base: an entry without SHA-256 is an old version's, never a stand-in.
    const full = parseWhole(serializeState({ ...version(), sha256_from: undefined }), { known });
    expect(full.ok && full.state.files.some((f) => f === known.get(f.path))).toBe(false);
  });

  it('stops when either list is out of path order (the caller reads both again, whole)', () => {
    const { base, version } = pair(20);
    const state = version();
    const merge = new ReferenceMerge(state, '200', new Set());
    for (const f of base.slice(0, 10)) merge.take(f);
    const taken = state.files.filter((f) => f.sha256 !== undefined).length;
    expect(taken).toBeGreaterThan(5);
    merge.take(base[3]!);
    expect(merge.inOrder).toBe(false);
    merge.take(base[12]!);
    expect(state.files.filter((f) => f.sha256 !== undefined)).toHaveLength(taken);
    const unsorted = version();
    unsorted.files.reverse();
    expect(new ReferenceMerge(unsorted, '200', undefined).inOrder).toBe(false);
    // A path twice is out of order too.
    const twice = new ReferenceMerge(version(), '200', new Set());
    twice.take(base[0]!);
    twice.take(base[0]!);
    expect(twice.inOrder).toBe(false);
  });

  it('finds the same unsafe paths one at a time in path order as in a list in any order', () => {
    const e = (path: string): FileEntry => ({ path, checksum: '0'.repeat(32), size: 0, modified_at: 0 });
    const paths = ['a', 'a!', 'a-b', 'a-b/c', 'a.c', 'a/x', 'a/x/y', 'a0', 'b/c', 'b/c/d/e', 'b/c/d', 'ab/c', '../up', 'x//y', 'x/', 'x'];
    const sorted = paths.map(e).sort(byPath);
    const check = new OrderedPathCheck();
    for (const f of sorted) check.add(f.path);
    const text = (list: { path: string; problem: string }[]) => list.map((r) => `${r.path}: ${r.problem}`).sort();
    expect(text(check.refusals())).toEqual(text(unsafeEntries(paths.map(e).reverse())));
    expect(check.refusals()).toEqual(unsafeEntries(sorted));
    expect(text(check.refusals())).toEqual(
      text([
        { path: '../up', problem: 'has a ".." segment' },
        { path: 'x//y', problem: 'has an empty segment (//, or a trailing /)' },
        { path: 'x/', problem: 'has an empty segment (//, or a trailing /)' },
        { path: 'a/x', problem: 'needs a to be a folder, but a is also listed as a file' },
        { path: 'a/x/y', problem: 'needs a to be a folder, but a is also listed as a file' },
        { path: 'a-b/c', problem: 'needs a-b to be a folder, but a-b is also listed as a file' },
        { path: 'b/c/d/e', problem: 'needs b/c to be a folder, but b/c is also listed as a file' },
        { path: 'b/c/d', problem: 'needs b/c to be a folder, but b/c is also listed as a file' },
        { path: 'x/', problem: 'needs x to be a folder, but x is also listed as a file' },
        { path: 'x//y', problem: 'needs x to be a folder, but x is also listed as a file' },
      ]),
    );
    // A chain of thousands of prefixes (a hostile base) stays cheap: a bisection per folder.
    const chain = new OrderedPathCheck();
    for (let i = 1; i <= 3000; i++) chain.add(`${'a'.repeat(i)}`);
    chain.add(`${'a'.repeat(1500)}/x`);
    // (names past 255 bytes are refused too: the clash comes after them)
    expect(chain.refusals().at(-1)).toEqual({
      path: `${'a'.repeat(1500)}/x`,
      problem: expect.stringMatching(/^needs a{1500} to be a folder/),
    });
  });
});

describe('a base merged as it is read (folder store)', () => {
  const T0 = 1_700_000_000;
  async function world() {
    const store = join(scratch('atlas-merge-'), 'store');
    const src = scratch();
    const home = scratch();
    const config = configWith({ store });
    const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
    const deps = (seconds: number) => depsFor(config, home, () => seconds * 1000);
    writeTree(src, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d${i % 10}/f${i}.txt`, `content ${i}`])));
    await syncPush(target(src), await deps(T0));
    writeFileSync(join(src, 'd3/f13.txt'), 'second');
    const second = await syncPush(target(src), await deps(T0 + 10));
    const basePath = join(store, 'ws', String(T0), '.sandbox-state');
    const base = JSON.parse(readFileSync(basePath, 'utf8')) as StateFile;
    expect(JSON.parse(readFileSync(join(store, 'ws', second.stats.version!, '.sandbox-state'), 'utf8'))).toMatchObject({
      sha256_from: String(T0),
    });
    return { src, target, deps, base, rewriteBase: (text: string) => writeFileSync(basePath, text) };
  }

  it('refuses a version whose base lists paths atlas refuses to write, before writing anything', async () => {
    const w = await world();
    const hostile = structuredClone(w.base);
    const like = hostile.files[0]!;
    hostile.files.push({ ...like, path: '../escape' }, { ...like, path: 'd1' });
    hostile.files.sort(byPath);
    w.rewriteBase(JSON.stringify(hostile));
    const dest = scratch();
    await expect(syncPull(w.target(dest), await w.deps(T0 + 20), {})).rejects.toThrow(
      'refers to the contents of version 1700000000, which lists paths atlas refuses to write: "../escape" has a ".." segment; "d1/f1.txt" needs d1 to be a folder, but d1 is also listed as a file;',
    );
    expect(readdirSync(dest)).toEqual([]);
    // `atlas sync versions` reads the base once for every version (whole): the same finding.
    const listed = await syncVersions(w.target(w.src), await w.deps(T0 + 21));
    expect(listed.versions.map((v) => v.status)).toEqual(['damaged', 'damaged']);
    expect(listed.versions[1]!.problem).toMatch(
      /^refers to the contents of version 1700000000, which lists paths atlas refuses to write: "\.\.\/escape"/,
    );
  });

  it('reads a base out of path order, or laid out otherwise, whole: the version pulls the same', async () => {
    const w = await world();
    const reversed = { ...w.base, files: [...w.base.files].reverse() };
    for (const text of [JSON.stringify(reversed), JSON.stringify(w.base, null, 2), JSON.stringify(reversed, null, 2)]) {
      w.rewriteBase(text);
      const dest = scratch();
      await syncPull(w.target(dest), await w.deps(T0 + 20), {});
      expect(readTree(dest)).toEqual(readTree(w.src));
    }
    const listed = await syncVersions(w.target(w.src), await w.deps(T0 + 21));
    expect(listed.versions.map((v) => v.status)).toEqual(['complete', 'complete']);
  });
});

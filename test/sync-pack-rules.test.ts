// Pack rules (docs/sync.md#packs), without a store: which contents go together in a pack, which
// neighbours one ranged read fetches, when pruning takes a pack apart, where a manifest may say
// pack and offset (and never a folder's own state), and how a ranged answer is cut to its range.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { resolveReferences } from '../src/domain/sync-manifest.js';
import {
  PACK_MAX_CONTENTS,
  PACK_TARGET,
  packGroups,
  placesOf,
  planRepack,
  planSpans,
  SPAN_GAP,
  SPAN_MAX,
} from '../src/domain/sync-pack.js';
import type { FileEntry, StateFile } from '../src/domain/sync-state.js';
import { serializeState } from '../src/domain/sync-state.js';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { bodyPieces } from '../src/sync/scan/body-pieces.js';
import { collectRange } from '../src/sync/scan/stream-file.js';
import { md5, P, Q, sha } from './helpers/sync-pack-fixtures.js';

describe('pack rules', () => {
  it('joins neighbours of one pack into one read when little lies between them, never past SPAN_MAX', () => {
    const at = (pack: string, offset: number, size: number) => ({ pack, offset, size });
    const spans = planSpans([at(P, 100, 10), at(Q, 0, 5), at(P, 0, 50), at(P, 110 + SPAN_GAP, 1), at(P, 111 + 2 * SPAN_GAP + 1, 1)]);
    expect(spans.map((s) => [s.pack, s.start, s.end, s.entries.length])).toEqual([
      [P, 0, 111 + SPAN_GAP, 3],
      [P, 111 + 2 * SPAN_GAP + 1, 112 + 2 * SPAN_GAP + 1, 1],
      [Q, 0, 5, 1],
    ]);
    const big = planSpans([at(P, 0, SPAN_MAX - 10), at(P, SPAN_MAX - 10, 20)]);
    expect(big.map((s) => [s.start, s.end])).toEqual([
      [0, SPAN_MAX - 10],
      [SPAN_MAX - 10, SPAN_MAX + 10],
    ]);
  });

  it('packs in a fixed order, each closed at PACK_TARGET bytes; the first place of a content wins', () => {
    const sizes = [PACK_TARGET - 1, 1, 5, PACK_TARGET, 7].map((size, i) => ({ size, i }));
    expect(packGroups(sizes).map((g) => g.map((c) => c.i))).toEqual([[0, 1], [2, 3], [4]]);
    expect(packGroups([])).toEqual([]);
    // Tiny contents: a pack closes at PACK_MAX_CONTENTS of them, whatever its size.
    expect(packGroups(Array.from({ length: PACK_MAX_CONTENTS * 2 + 1 }, () => ({ size: 1 }))).map((g) => g.length)).toEqual([
      PACK_MAX_CONTENTS,
      PACK_MAX_CONTENTS,
      1,
    ]);
    const s = sha('x');
    const t = sha('t');
    const ours = [
      { size: 1, sha256: s },
      { size: 1, sha256: t, pack: Q, offset: 9 },
      { size: 1, sha256: s, pack: P, offset: 3 },
      { size: 1, sha256: sha('y') },
    ];
    const newest = [
      { size: 1, sha256: s, pack: Q, offset: 0 },
      { size: 1, sha256: sha('z'), pack: Q, offset: 1 },
    ];
    // Only the contents asked about; the first place named wins, this push's own before the newest version's.
    expect(placesOf(new Set([s, sha('z'), sha('y')]), ours, newest)).toEqual(
      new Map([
        [s, { pack: P, offset: 3 }],
        [sha('z'), { pack: Q, offset: 1 }],
      ]),
    );
    expect(placesOf(new Set())).toEqual(new Map());
  });

  it('takes apart a pack at least half unused and past the grace period; counts the rest as unused bytes kept', () => {
    const old = { size: 100, modifiedMs: 0 };
    const uses = (...contents: [number, number][]) =>
      new Map(contents.map(([offset, size]) => [offset, { offset, size, sha256: sha(`${offset}`) }]));
    const now = 10 * 3600 * 1000;
    const blobs = new Map([
      [P, old],
      [Q, old],
      ['c'.repeat(64), { size: 100, modifiedMs: now }],
      ['d'.repeat(64), old],
    ]);
    const plan = planRepack(
      blobs,
      new Map([
        [P, uses([0, 40], [40, 10])], // 50 of 100 unused: taken apart
        [Q, uses([0, 60], [30, 30])], // overlapping entries are counted once: 40 unused, kept
        ['c'.repeat(64), uses([0, 10])], // young: kept whole
        ['d'.repeat(64), uses([0, 100])], // all used
        ['e'.repeat(64), uses([0, 1])], // gone already
      ]),
      now,
      3600,
    );
    expect(plan.apart.map((a) => [a.pack, a.used.map((c) => c.offset), a.unused])).toEqual([[P, [0, 40], 50]]);
    expect(plan.unusedKept).toBe(40 + 90);
  });

  it('reads pack and offset in a stored manifest only, with a SHA-256; a folder state that names them is corrupt', () => {
    const entry = (extra: string) =>
      `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"${md5('a')}","size":1,"modified_at":1${extra}}]}`;
    const good = parseWhole(entry(`,"sha256":"${sha('a')}","pack":"${P}","offset":7`));
    expect(good.ok && good.state.files[0]).toMatchObject({ pack: P, offset: 7 });
    expect(parseWhole(entry(`,"pack":"${P}","offset":7`))).toMatchObject({ ok: false, problem: 'files[0] is in a pack but has no sha256' });
    expect(parseWhole(entry(`,"sha256":"${sha('a')}","pack":"nope","offset":7`))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('bad pack or offset'),
    });
    expect(parseWhole(entry(`,"sha256":"${sha('a')}","pack":"${P}"`))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('bad pack or offset'),
    });
    expect(parseWhole(entry(`,"sha256":"${sha('a')}","pack":"${P}","offset":-1`))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('bad pack or offset'),
    });
    expect(parseWhole(entry(`,"sha256":"${sha('a')}","pack":"${P}","offset":7`), { local: true })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('never does'),
    });
    // A hostile manifest cannot make a reader read (and hold) more than a small content for one entry.
    const huge = `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"${md5('a')}","size":${2 ** 40},"modified_at":1,"sha256":"${sha('a')}","pack":"${P}","offset":0}]}`;
    expect(parseWhole(huge)).toMatchObject({ ok: false, problem: 'files[0] is in a pack but is not under 1048576 bytes' });
  });

  it('writes pack and offset in a stored manifest only; an entry named by reference leaves them to its base, which gives them back', () => {
    const files: FileEntry[] = [{ path: 'a', checksum: md5('a'), size: 1, modified_at: 1, sha256: sha('a'), pack: P, offset: 7 }];
    const state: StateFile = { version: '1.0', last_synced_at: 1, files };
    expect(serializeState(state)).toContain(`"pack":"${P}","offset":7`);
    expect(serializeState(state, undefined, 'local')).not.toContain('pack');
    const referring = serializeState({ ...state, sha256_from: '100' }, () => true);
    expect(referring).not.toContain('pack');
    const parsed = parseWhole(referring);
    const resolved = parsed.ok ? resolveReferences(parsed.state, '200', state) : undefined;
    expect(resolved?.ok && resolved.state.files[0]).toMatchObject({ sha256: sha('a'), pack: P, offset: 7 });
  });

  it('a ranged answer is copied as it arrives; a whole object (Range ignored) is cut to the range', async () => {
    async function* pieces(...parts: string[]) {
      for (const p of parts) yield Buffer.from(p);
    }
    // The answer to a range (skip 0), or the whole object sent instead (skip the range's start).
    const range = (body: AsyncIterable<Buffer>, skip: number, length: number) => bodyPieces(Readable.from(body), skip, length);
    expect((await collectRange(range(pieces('cd', 'ef'), 0, 4), 4)).toString()).toBe('cdef');
    expect((await collectRange(range(pieces('abc', 'defgh'), 2, 4), 4)).toString()).toBe('cdef');
    expect((await collectRange(range(pieces('c'), 0, 4), 4)).toString()).toBe('c');
    // A whole object is read only up to the end of the range, however much more a server sends.
    async function* endless() {
      for (;;) yield Buffer.from('0123456789');
    }
    expect((await collectRange(range(endless(), 12, 5), 5)).toString()).toBe('23456');
    // Into a buffer the caller gives (and reuses): the answer is that buffer's memory.
    const into = Buffer.alloc(16);
    const got = await collectRange(range(pieces('cd', 'ef'), 0, 4), 4, into);
    expect(got.toString()).toBe('cdef');
    expect(got.buffer).toBe(into.buffer);
    expect(into.subarray(0, 4).toString()).toBe('cdef');
  });
});

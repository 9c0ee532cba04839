// Reading `.sandbox-state` a piece at a time (src/domain/sync-state-parse.ts): the same reading as
// JSON.parse of the whole text wherever the pieces are cut, a whole reading for any other layout,
// the folder's own entries taken in place of equal ones, and a link where the local state goes.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FileEntry, StateFile } from '../src/domain/sync-state.js';
import { serializeState } from '../src/domain/sync-state.js';
import type { ParseOptions } from '../src/domain/sync-state-parse.js';
import { parseStateChunks, parseStateStream, parseWhole } from '../src/domain/sync-state-parse.js';
import { readLocalState } from '../src/sync/scan/local-state.js';
import { DirectoryStore } from '../src/sync/stores/dir-store.js';
import { readManifest } from '../src/sync/versions/versions.js';
import { removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(removeScratch);

const hex = (c: string, n: number) => c.repeat(n);
const PACK = hex('e', 64);
const entry = (path: string, extra: Partial<FileEntry> = {}): FileEntry => ({
  path,
  checksum: hex('a', 32),
  size: 3,
  modified_at: 1_700_000_000,
  sha256: hex('b', 64),
  mode: 0o644,
  ...extra,
});

/** What the product does with a text: read as atlas lays it out, else whole. */
const parseStateFile = (text: string, options: ParseOptions = {}) => parseStateChunks([text], options) ?? parseWhole(text, options);

/** Text cut into pieces of `size` characters. */
const cut = (text: string, size: number) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

const STATE: StateFile = {
  version: '1.0',
  last_synced_at: 1_700_000_100,
  sha256_from: '1700000000',
  parent: '1700000050',
  files: [
    entry('plain.txt'),
    // Names that hold the layout's own marks, escaped in JSON: never a place to cut.
    entry('a},{"path":"x'),
    entry('b}]c', { pack: PACK, offset: 7 }),
    entry('quote"and\\slash', { mode: 0o755 }),
    entry('ünïcode/文件.txt'),
    entry('link', { sha256: undefined, link: 'plain.txt', mode: undefined }),
    entry('z}]'),
  ],
  dirs: ['empty}]', 'e2'],
  synced_version: '1700000100',
  conflict_of: '1700000090',
  conflicts: ['plain.txt'],
};

describe('reading a state a piece at a time', () => {
  it('reads as JSON.parse does, wherever the text is cut', async () => {
    const text = serializeState(STATE);
    const whole = parseWhole(text);
    expect(whole.ok).toBe(true);
    for (const size of [1, 2, 3, 7, 10, 64, 4096]) expect(parseStateChunks(cut(text, size))).toEqual(whole);
    for (let at = 0; at <= text.length; at++) expect(parseStateChunks([text.slice(0, at), text.slice(at)])).toEqual(whole);
    expect(
      await parseStateStream(
        (async function* () {
          yield* cut(text, 5);
        })(),
      ),
    ).toEqual(whole);
    const empty = serializeState({ version: '1.0', last_synced_at: 0, files: [] });
    expect(parseStateChunks(cut(empty, 3))).toEqual(parseWhole(empty));
  });

  it('leaves any other layout to a whole reading, which decides', () => {
    const others = [
      JSON.stringify(STATE, null, 2),
      // "files" before "version", a second "files" after the first, entries with nested values.
      `{"files":[],"version":"1.0","last_synced_at":1}`,
      `{"version":"1.0","last_synced_at":1,"files":[${JSON.stringify(entry('a'))}],"files":[]}`,
      `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","x":[{"q":1},{"path":2}],"checksum":"${hex('a', 32)}","size":1,"modified_at":1}]}`,
      `{"version":"1.0","last_synced_at":1,"files":{"path":1}}`,
      // Cut off, or not JSON at all.
      serializeState(STATE).slice(0, 200),
      'not json',
    ];
    for (const text of others) {
      expect(parseStateChunks([text])).toBeUndefined();
      expect(parseStateFile(text)).toEqual(parseWhole(text));
    }
    expect(parseStateFile(others[2]!)).toMatchObject({ ok: true, state: { files: [] } });
    expect(parseStateFile(others[3]!)).toMatchObject({ ok: true });
    expect(parseStateFile(others[5]!)).toMatchObject({ ok: false, kind: 'corrupt', problem: expect.stringMatching(/^not valid JSON/) });
  });

  it('says what is wrong with an entry as a whole reading does, and stops there', () => {
    const files = [entry('a'), entry('b'), { ...entry('c'), checksum: 'ETAG' }, entry('d')];
    const text = serializeState({ version: '1.0', last_synced_at: 1, files });
    const problem = { ok: false, kind: 'corrupt', problem: 'files[2].checksum is not an MD5 (32 lowercase hex)' };
    expect(parseStateChunks(cut(text, 50))).toEqual(problem);
    expect(parseWhole(text)).toEqual(problem);
    expect(parseStateChunks(['{"version":"2.0","last_synced_at":1,"files":[', ']}'])).toMatchObject({ ok: false, kind: 'newer' });
    // A folder's own state never says where contents are stored.
    const packed = serializeState({ version: '1.0', last_synced_at: 1, files: [entry('x', { pack: PACK, offset: 0 })] });
    expect(parseStateChunks([packed], { local: true })).toMatchObject({ ok: false, problem: /says where its content is stored/ });
  });

  it('tries a bounded number of places for the end of the last entry', () => {
    // A last entry whose name holds `}]` a hundred thousand times: read whole, at once.
    const text = serializeState({ version: '1.0', last_synced_at: 1, files: [entry('}]'.repeat(100_000))] });
    const started = Date.now();
    expect(parseStateChunks([text])).toBeUndefined();
    expect(parseStateFile(text)).toMatchObject({ ok: true, state: { files: [{ path: '}]'.repeat(100_000) }] } });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("takes the folder's own entry in place of an equal one, with the stored one's place in a pack", () => {
    const mine = [
      entry('same'),
      entry('packed'),
      entry('changed'),
      entry('moved', { pack: hex('c', 64), offset: 1 }),
      entry('nanoseconds', { mtime_ns: 5 }),
    ];
    const known = new Map(mine.map((f) => [f.path, f]));
    const stored = [
      entry('same'),
      entry('packed', { pack: PACK, offset: 9 }),
      entry('changed', { checksum: hex('f', 32) }),
      entry('moved', { pack: PACK, offset: 2 }),
      entry('new'),
      entry('nanoseconds', { mtime_ns: 6 }),
    ];
    const parsed = parseStateFile(serializeState({ version: '1.0', last_synced_at: 1, files: stored }), { known });
    if (!parsed.ok) throw new Error(parsed.problem);
    const [same, packed, changed, moved, added, nanoseconds] = parsed.state.files.sort(
      (a, b) => stored.findIndex((s) => s.path === a.path) - stored.findIndex((s) => s.path === b.path),
    );
    expect(same).toBe(mine[0]);
    expect(packed).toBe(mine[1]);
    expect(mine[1]).toMatchObject({ pack: PACK, offset: 9 });
    // Different content, or another place in a pack than the one held: the stored entry as it is.
    expect(changed).not.toBe(mine[2]);
    expect(changed).toEqual(stored[2]);
    expect(moved).not.toBe(mine[3]);
    expect(moved).toEqual(stored[3]);
    expect(mine[3]).toMatchObject({ offset: 1 });
    expect(added).toEqual(stored[4]);
    // Another time to the nanosecond: the stored time, not the folder's.
    expect(nanoseconds).toEqual(stored[5]);
    expect(mine[4]).toMatchObject({ mtime_ns: 5 });
  });
});

describe("the folder's own state", () => {
  it('is read in pieces, any layout, and never through a link', async () => {
    const root = scratch('local-state');
    const warnings: string[] = [];
    const warn = (w: string) => warnings.push(w);
    const state: StateFile = {
      version: '1.0',
      last_synced_at: 5,
      files: Array.from({ length: 20_000 }, (_, i) => entry(`d/${i}`)),
      synced_version: '1700000000',
    };
    writeFileSync(join(root, '.sandbox-state'), serializeState(state, undefined, 'local'));
    expect((await readLocalState(root, warn))?.files.length).toBe(20_000);
    writeFileSync(join(root, '.sandbox-state'), JSON.stringify({ ...state, files: state.files.slice(0, 2) }, null, 1));
    expect(await readLocalState(root, warn)).toMatchObject({ synced_version: '1700000000', files: [{ path: 'd/0' }, { path: 'd/1' }] });
    expect(warnings).toEqual([]);
    // A link planted where the state goes (an agent can write the folder): not followed.
    const other = scratch('elsewhere');
    mkdirSync(join(other, 'x'), { recursive: true });
    writeFileSync(join(other, 'secret'), 'not a state');
    const linked = scratch('linked');
    symlinkSync(join(other, 'secret'), join(linked, '.sandbox-state'));
    expect(await readLocalState(linked, warn)).toBeUndefined();
    expect(warnings).toEqual([
      `${join(linked, '.sandbox-state')} is a symbolic link, not atlas's state; doing a full sync, which writes it again`,
    ]);
  });
});

describe("a store's manifest", () => {
  it('is read as it arrives, and read again whole when laid out otherwise', async () => {
    const base = scratch('manifests');
    const state: StateFile = { version: '1.0', last_synced_at: 7, files: [entry('a'), entry('b/c')] };
    writeTree(base, {
      'ws/1700000001/.sandbox-state': serializeState(state),
      'ws/1700000002/.sandbox-state': JSON.stringify(state, null, 2),
      'ws/1700000003/.sandbox-state': '{"version":"1.0"',
    });
    const store = new DirectoryStore(base);
    const expected = { ok: true, state };
    expect(await readManifest(store, 'ws', '1700000001')).toEqual(expected);
    expect(await readManifest(store, 'ws', '1700000002')).toEqual(expected);
    expect(await readManifest(store, 'ws', '1700000003')).toMatchObject({ ok: false, kind: 'corrupt', problem: /^not valid JSON/ });
    expect(await readManifest(store, 'ws', '1700000004')).toBeUndefined();
  });
});

// Folder modes (issue 36, fidelity of rsync -a): a 0700 folder was pulled as 0755, its contents
// then listable by other users. A version records the permission bits of folders whose bits are
// not 0755 (`dir_modes`), a pull gives them back once everything inside is written (a 0500 folder
// too), a chmod of a folder alone makes a new version, and a hostile manifest's folder modes are
// refused (setuid bits) or never followed through a link planted in the folder. Folder mtimes were
// the pull's: a version records them (`dir_times`) and a pull sets them last.
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const modeOf = (path: string) => statSync(path).mode & 0o777;

function world() {
  const base = scratch('atlas-folder-modes-');
  const config = configWith({ store: join(base, 'store') });
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  let clock = 1_700_000_000;
  const deps = () => depsFor(config, join(base, 'home'), () => (clock += 10) * 1000);
  return { base, target, deps, store: join(base, 'store') };
}

describe('folder modes', () => {
  it('a 0700, a 0750 and a read-only 0555 folder come back with their bits; a chmod alone makes a version', async () => {
    const w = world();
    const src = join(w.base, 'src');
    writeTree(src, { 'private/key.txt': 'k', 'private/deeper/x.txt': 'x', 'group/g.txt': 'g', 'ro/r.txt': 'r', 'plain/p.txt': 'p' });
    mkdirSync(join(src, 'empty-private'));
    chmodSync(join(src, 'private/deeper'), 0o750);
    chmodSync(join(src, 'private'), 0o700);
    chmodSync(join(src, 'group'), 0o750);
    chmodSync(join(src, 'ro'), 0o555);
    chmodSync(join(src, 'empty-private'), 0o700);
    chmodSync(join(src, 'plain'), 0o755);
    await syncPush(w.target(src), await w.deps());
    const dest = join(w.base, 'dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(readTree(dest)).toEqual(readTree(src));
    for (const [path, mode] of [
      ['private', 0o700],
      ['private/deeper', 0o750],
      ['group', 0o750],
      ['ro', 0o555],
      ['empty-private', 0o700],
      ['plain', 0o755],
    ] as const)
      expect(modeOf(join(dest, path)), path).toBe(mode);
    // A folder's chmod alone is a change.
    chmodSync(join(src, 'group'), 0o700);
    const pushed = await syncPush(w.target(src), await w.deps());
    expect(pushed.stats.version).not.toBeNull();
    await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(modeOf(join(dest, 'group'))).toBe(0o700);
    // Nothing more changed: no version.
    expect((await syncPush(w.target(src), await w.deps())).stats.version).toBeNull();
    chmodSync(join(src, 'ro'), 0o755);
    chmodSync(join(dest, 'ro'), 0o755);
  });

  it('a manifest without dir_modes (older atlas) still pulls; setuid bits and unsafe paths are refused; a planted link is not followed', async () => {
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[],"dir_modes":{"a":2541}}')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/"dir_modes" is not folder paths with permission bits/),
    });
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[],"dir_modes":[1]}')).toMatchObject({ ok: false });
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[]}')).toMatchObject({ ok: true });
    const w = world();
    const src = join(w.base, 'src');
    writeTree(src, { 'a/f.txt': 'f' });
    chmodSync(join(src, 'a'), 0o700);
    await syncPush(w.target(src), await w.deps());
    const { version } = (await syncVersions(w.target(src), await w.deps())).versions[0]!;
    const manifest = join(w.store, 'ws', version, '.sandbox-state');
    const state = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, unknown>;
    // A folder here that is a link to one outside: the stored mode of "out/inner" must not reach it.
    const outside = join(w.base, 'outside');
    mkdirSync(join(outside, 'inner'), { recursive: true });
    chmodSync(join(outside, 'inner'), 0o755);
    const dest = join(w.base, 'dest');
    mkdirSync(dest);
    symlinkSync(outside, join(dest, 'out'));
    writeFileSync(manifest, JSON.stringify({ ...state, dir_modes: { a: 0o700, 'out/inner': 0o700 } }));
    await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(modeOf(join(outside, 'inner'))).toBe(0o755);
    expect(modeOf(join(dest, 'a'))).toBe(0o700);
    writeFileSync(manifest, JSON.stringify({ ...state, dir_modes: { '../x': 0o700 } }));
    const listed = (await syncVersions(w.target(src), await w.deps())).versions[0]!;
    expect(listed.status).toBe('damaged');
    const { dir_modes: _, ...old } = state;
    writeFileSync(manifest, JSON.stringify(old));
    const again = join(w.base, 'again');
    await syncPull(w.target(again), await w.deps(), {});
    expect(readTree(again)).toEqual({ 'a/f.txt': 'f' });
  });

  it('folder mtimes come back (deepest and empty folders too, a read-only one too); a bad dir_times is refused', async () => {
    const w = world();
    const src = join(w.base, 'src');
    writeTree(src, { 'a/b/c.txt': 'c', 'ro/r.txt': 'r' });
    mkdirSync(join(src, 'empty'));
    const times: Record<string, number> = { a: 1_500_000_000, 'a/b': 1_500_000_100, empty: 1_500_000_200, ro: 1_500_000_300 };
    for (const [path, t] of Object.entries(times)) utimesSync(join(src, path), t, t);
    chmodSync(join(src, 'ro'), 0o555);
    await syncPush(w.target(src), await w.deps());
    const dest = join(w.base, 'dest');
    await syncPull(w.target(dest), await w.deps(), {});
    for (const [path, t] of Object.entries(times)) expect([path, Math.floor(statSync(join(dest, path)).mtimeMs / 1000)]).toEqual([path, t]);
    expect(modeOf(join(dest, 'ro'))).toBe(0o555);
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[],"dir_times":{"a":-1}}')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/"dir_times" is not folder paths/),
    });
    expect(parseWhole('{"version":"1.0","last_synced_at":1,"files":[],"dir_times":{"a":5}}')).toMatchObject({
      ok: true,
      state: { dir_times: { a: 5 } },
    });
  });
});

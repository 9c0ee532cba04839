// The .sandbox-state format, path safety, exclusions and the push/pull plans (pure).
import { describe, expect, it } from 'vitest';
import type { Observation } from '../src/domain/sync-plan.js';
import { exceedsMaxDelete, nextVersionName, parseMaxDelete, planPull, planPush, pullMode, sortVersions } from '../src/domain/sync-plan.js';
import type { FileEntry } from '../src/domain/sync-state.js';
import {
  byPath,
  compileExcludes,
  emptyState,
  isExcluded,
  pairByPath,
  pathLookup,
  pathProblem,
  pathsOfBoth,
  serializeState,
} from '../src/domain/sync-state.js';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { unsafeEntries } from '../src/domain/sync-unsafe.js';

const md5 = (c: string) => c.repeat(32);
const entry = (path: string, c = 'a', size = 1): FileEntry => ({ path, checksum: md5(c), size, modified_at: 100 });

describe('.sandbox-state', () => {
  it('round-trips the seed format, files sorted by path', () => {
    const state = { version: '1.0', last_synced_at: 1700000000, files: [entry('b'), entry('a/x')] };
    const text = serializeState(state);
    expect(JSON.parse(text)).toEqual({ version: '1.0', last_synced_at: 1700000000, files: [entry('a/x'), entry('b')] });
    expect(parseWhole(text)).toEqual({ ok: true, state: { ...state, files: [entry('a/x'), entry('b')] } });
    expect(serializeState(emptyState())).toBe('{"version":"1.0","last_synced_at":0,"files":[]}\n');
  });

  it('calls damaged files corrupt and a newer major version newer', () => {
    const bad = [
      'not json',
      '[]',
      '{"last_synced_at":1,"files":[]}',
      '{"version":"x","last_synced_at":1,"files":[]}',
      '{"version":"1.0","last_synced_at":-1,"files":[]}',
      '{"version":"1.0","last_synced_at":1,"files":{}}',
      '{"version":"1.0","last_synced_at":1,"files":[3]}',
      '{"version":"1.0","last_synced_at":1,"files":[{"path":1}]}',
      '{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"ETAG-1","size":1,"modified_at":1}]}',
      `{"version":"1.0","last_synced_at":1,"files":[{"path":"a","checksum":"${md5('a')}","size":1.5,"modified_at":1}]}`,
    ];
    for (const text of bad) expect(parseWhole(text)).toMatchObject({ ok: false, kind: 'corrupt' });
    expect(parseWhole('{"version":"2.0","last_synced_at":1,"files":[]}')).toMatchObject({ ok: false, kind: 'newer' });
    expect(parseWhole('{"version":"1.7","last_synced_at":1,"files":[]}').ok).toBe(true);
  });

  it('refuses every path that could leave the root or clash', () => {
    for (const p of [
      '',
      '/etc/passwd',
      '../x',
      'a/../../x',
      'a/./b',
      'a//b',
      'a/',
      'a\\b',
      'C:x',
      'a\0b',
      '.git/config',
      'x/.git/hooks/pre-commit',
      '.sandbox-state',
      `${'x'.repeat(256)}`,
      'y'.repeat(4097),
    ]) {
      expect(pathProblem(p), JSON.stringify(p)).toBeDefined();
    }
    for (const p of ['a', 'a/b/c.txt', '.hidden', 'sp ace/ü.txt', '..foo', 'a..b']) expect(pathProblem(p)).toBeUndefined();
    const refusals = unsafeEntries([entry('a'), entry('a/b'), entry('c'), entry('c'), entry('../up')]);
    expect(refusals.map((r) => r.path).sort()).toEqual(['../up', 'a/b', 'c']);
  });

  it('excludes like gitignore: names at any depth, anchored paths, folders only, **', () => {
    const rules = compileExcludes(['node_modules/', '*.log', '/build', 'docs/**/*.tmp', '# comment', '  ', 'a?c']);
    expect(rules).toHaveLength(5);
    expect(isExcluded('node_modules', true, rules)).toBe(true);
    expect(isExcluded('pkg/node_modules', true, rules)).toBe(true);
    expect(isExcluded('node_modules', false, rules)).toBe(false);
    expect(isExcluded('x/y/debug.log', false, rules)).toBe(true);
    expect(isExcluded('build', true, rules)).toBe(true);
    expect(isExcluded('src/build', true, rules)).toBe(false);
    expect(isExcluded('docs/a/b/c.tmp', false, rules)).toBe(true);
    expect(isExcluded('docs/c.tmp', false, rules)).toBe(true);
    expect(isExcluded('abc', false, rules)).toBe(true);
    expect(isExcluded('src/.git', true, [])).toBe(true);
    expect(isExcluded('.sandbox-state.lock', true, [])).toBe(true);
    expect(isExcluded('src/app.ts', false, rules)).toBe(false);
  });
});

describe('pull plan', () => {
  const observeFrom =
    (m: Record<string, Observation>) =>
    (p: string): Observation =>
      m[p] ?? { kind: 'missing' };
  const file = (c: string): Observation => ({ kind: 'file', checksum: md5(c), size: 1, modified_at: 1 });

  it('downloads new and changed, skips equal, deletes only unchanged tracked files', () => {
    const remote = [entry('new'), entry('same'), entry('changed', 'b'), entry('edited', 'b'), entry('untracked', 'b')];
    const tracked = new Map(
      [entry('same'), entry('changed'), entry('edited'), entry('gone'), entry('gone-edited'), entry('gone-missing')].map((f) => [
        f.path,
        f,
      ]),
    );
    const plan = planPull(
      remote,
      tracked,
      observeFrom({
        same: file('a'),
        changed: file('a'),
        edited: file('c'),
        untracked: file('c'),
        gone: file('a'),
        'gone-edited': file('c'),
        mine: file('a'),
      }),
    );
    expect(plan.download.map((f) => f.path)).toEqual(['new', 'changed']);
    expect(plan.skip.map((f) => f.path)).toEqual(['same']);
    expect(plan.conflicts.map((f) => f.path)).toEqual(['edited', 'untracked']);
    expect(plan.delete).toEqual(['gone']);
    expect(plan.keep.map((k) => k.path)).toEqual(['gone-edited']);
  });

  it("downloads into an empty folder from the version's own list, and copies it at the first entry that is not downloaded", () => {
    const remote = [entry('a'), entry('b'), entry('c', 'b'), entry('d')];
    const empty = planPull(remote, new Map(), observeFrom({}));
    expect(empty.download).toBe(remote);
    expect(planPull([], new Map(), observeFrom({})).download).toEqual([]);
    // The first entries downloaded, then one equal, then one downloaded again: the first ones kept in order.
    const mixed = planPull(remote, new Map([['c', entry('c')]]), observeFrom({ b: file('a'), c: file('a') }));
    expect(mixed.download.map((f) => f.path)).toEqual(['a', 'c', 'd']);
    expect(mixed.download).not.toBe(remote);
    expect(mixed.skip.map((f) => f.path)).toEqual(['b']);
    // The very first entry not downloaded: nothing to copy before it.
    const first = planPull(remote, new Map(), observeFrom({ a: file('a') }));
    expect(first.download.map((f) => f.path)).toEqual(['b', 'c', 'd']);
  });

  it('refuses folders, special files and blocked paths; symlinks are conflicts', () => {
    const plan = planPull(
      [entry('d'), entry('o'), entry('b/x'), entry('l')],
      new Map([['t', entry('t')]]),
      observeFrom({
        d: { kind: 'dir' },
        o: { kind: 'other' },
        'b/x': { kind: 'blocked', problem: 'b is a symlink' },
        l: { kind: 'symlink' },
        t: { kind: 'dir' },
      }),
    );
    expect(plan.refused.map((r) => r.path)).toEqual(['d', 'o', 'b/x']);
    expect(plan.conflicts.map((r) => r.path)).toEqual(['l']);
    expect(plan.keep.map((r) => r.path)).toEqual(['t']);
  });

  it('replaces a link the last sync left unchanged, skips an equal one, and never writes through one it did not', () => {
    const link = (path: string, target: string): FileEntry => ({ ...entry(path, target), link: target });
    const here = (target: string): Observation => ({ kind: 'symlink', checksum: md5(target) });
    const plan = planPull(
      [link('moved', 'new'), link('same', 'a'), link('mine', 'new')],
      new Map([['moved', link('moved', 'old')]]),
      observeFrom({ moved: here('old'), same: here('a'), mine: here('other') }),
    );
    expect(plan.download.map((f) => f.path)).toEqual(['moved']);
    expect(plan.skip.map((f) => f.path)).toEqual(['same']);
    expect(plan.conflicts.map((r) => r.path)).toEqual(['mine']);
  });

  it('decides full, incremental or fresh by last_synced_at', () => {
    expect(pullMode(undefined, 1000, 3_600_000)).toBe('full');
    expect(pullMode(0, 1000, 3_600_000)).toBe('full');
    expect(pullMode(1000 - 3600, 1000, 3_600_000)).toBe('incremental');
    expect(pullMode(1000 - 10, 1000, 3_600_000)).toBe('fresh');
  });

  it('max delete: a percentage of tracked files or a count', () => {
    expect(parseMaxDelete('50%')).toEqual({ kind: 'percent', value: 50 });
    expect(parseMaxDelete(' 7 ')).toEqual({ kind: 'count', value: 7 });
    for (const bad of ['', '-1', '101%', 'half']) expect(parseMaxDelete(bad)).toBeUndefined();
    expect(exceedsMaxDelete({ kind: 'percent', value: 50 }, 5, 10)).toBe(false);
    expect(exceedsMaxDelete({ kind: 'percent', value: 50 }, 6, 10)).toBe(true);
    expect(exceedsMaxDelete({ kind: 'count', value: 2 }, 3, 100)).toBe(true);
  });
});

describe('push plan and versions', () => {
  it('sends each content the latest version lacks once, and sees when nothing changed (mode, link and empty folders count)', () => {
    const blob = (e: FileEntry, c: string) => ({ ...e, sha256: c.repeat(64), mode: 0o644 });
    const latest = [blob(entry('a'), 'a'), blob(entry('b', 'b'), 'b'), blob(entry('old', 'c'), 'c')];
    const plan = planPush(
      [blob(entry('a'), 'a'), blob(entry('b', 'd'), 'd'), blob(entry('moved', 'c'), 'c'), blob(entry('copy', 'd'), 'd')],
      latest,
    );
    expect(plan.upload.map((f) => f.path)).toEqual(['b']);
    expect(plan.reused).toBe(3);
    expect(plan.removed).toBe(1);
    expect(plan.unchanged).toBe(false);
    expect(planPush(latest, latest).unchanged).toBe(true);
    expect(
      planPush(
        latest.map((f) => (f.path === 'a' ? { ...f, mode: 0o755 } : f)),
        latest,
      ).unchanged,
    ).toBe(false);
    expect(planPush(latest, latest, ['empty'], []).unchanged).toBe(false);
    expect(planPush([...latest, { ...entry('l'), link: 'a' }], [...latest, { ...entry('l'), link: 'b' }]).unchanged).toBe(false);
    // A version stored before modes were kept is not re-made for a mode alone.
    expect(
      planPush(
        latest,
        latest.map(({ mode: _, ...f }) => f),
      ).unchanged,
    ).toBe(true);
    expect(planPush([entry('a')], [entry('a'), entry('b')]).unchanged).toBe(false);
    expect(planPush([entry('x', 'a')], [entry('a')]).unchanged).toBe(false);
    expect(planPush([], undefined).unchanged).toBe(false);
  });

  it('decides the same whether the lists are in path order (walked side by side) or not (through a map)', () => {
    const blob = (e: FileEntry, c: string) => ({ ...e, sha256: c.repeat(64), mode: 0o644 });
    const latest = [blob(entry('a'), 'a'), blob(entry('b', 'b'), 'b'), blob(entry('c/x', 'c'), 'c'), blob(entry('old', 'e'), 'e')];
    const local = [
      blob(entry('a'), 'a'),
      blob(entry('b', 'd'), 'd'),
      blob(entry('c/x', 'c'), 'c'),
      blob(entry('copy', 'd'), 'd'),
      blob(entry('moved', 'e'), 'e'),
      { ...entry('z'), link: 'a' },
    ];
    const sorted = planPush(local, latest);
    expect(sorted).toEqual({ unchanged: false, upload: [local[1]], reused: 4, removed: 1 });
    expect(planPush([...local].reverse(), [...latest].reverse())).toEqual({ ...sorted, upload: [local[3]] });
    expect(planPush(local, [...latest].reverse())).toEqual(sorted);
    // A list in path order with a path twice is not walked side by side.
    expect(planPush(latest, [...latest, latest[3]!]).removed).toBe(0);
    const paired: string[] = [];
    expect(pairByPath(local, latest, (f, there) => paired.push(`${f.path}:${there?.path ?? '-'}`))).toBe(4);
    expect(paired).toEqual(['a:a', 'b:b', 'c/x:c/x', 'copy:-', 'moved:-', 'z:-']);
  });

  it('names versions by unix seconds, always after the newest', () => {
    expect(nextVersionName(100, [])).toBe('100');
    expect(nextVersionName(100, ['99', '100'])).toBe('101');
    expect(sortVersions(['20', '3', '.tasks', 'x', '100'])).toEqual(['3', '20', '100']);
  });
});

describe('path checks at 100,000 entries', () => {
  const e = (path: string): FileEntry => ({ path, checksum: '0'.repeat(32), size: 0, modified_at: 0 });
  it('finds a file listed where a folder is needed at any depth, after many clean files in other folders', () => {
    const files = [...Array.from({ length: 1000 }, (_, i) => e(`d${i % 10}/sub/f${i}`)), e('d3/sub'), e('x/y/z/w'), e('x/y'), e('x/y/q')];
    expect(unsafeEntries(files)).toEqual([
      ...Array.from({ length: 100 }, (_, i) => ({
        path: `d3/sub/f${i * 10 + 3}`,
        problem: 'needs d3/sub to be a folder, but d3/sub is also listed as a file',
      })),
      { path: 'x/y/z/w', problem: 'needs x/y to be a folder, but x/y is also listed as a file' },
      { path: 'x/y/q', problem: 'needs x/y to be a folder, but x/y is also listed as a file' },
    ]);
    // In path order, paths are found by bisection instead of a set: the same findings.
    const inOrder = [...files].sort(byPath);
    const found = (list: FileEntry[]) =>
      unsafeEntries(list)
        .map((r) => `${r.path}: ${r.problem}`)
        .sort();
    expect(found(inOrder)).toEqual(found(files));
    expect(found([e('a'), e('a/b'), e('b'), e('b/c/d'), e('b/c')])).toEqual(found([e('a'), e('a/b'), e('b'), e('b/c'), e('b/c/d')]));
  });

  it('finds paths and joins two lists the same way in path order (bisection, a merge) as not (sets)', () => {
    const a = ['a', 'b/x', 'c', 'e'].map(e);
    const b = ['a', 'b', 'd', 'e', 'f'].map(e);
    const both = ['a', 'b', 'b/x', 'c', 'd', 'e', 'f'];
    expect(pathsOfBoth(a, b)).toEqual(both);
    expect(pathsOfBoth(b, a)).toEqual(both);
    expect(pathsOfBoth([], b)).toEqual(b.map((f) => f.path));
    expect(pathsOfBoth(a, [])).toEqual(a.map((f) => f.path));
    expect([...pathsOfBoth([...a].reverse(), b)].sort()).toEqual(both);
    for (const list of [a, [...a].reverse()]) {
      const listed = pathLookup(list);
      expect(['a', 'b/x', 'c', 'e'].every(listed)).toBe(true);
      expect(['', 'b', 'b/', 'd', 'f', 'A'].some(listed)).toBe(false);
    }
    expect(pathLookup([])('a')).toBe(false);
  });

  it('counts a segment in bytes of UTF-8: 255 pass, 256 do not', () => {
    expect(pathProblem(`a/${'€'.repeat(85)}`)).toBeUndefined();
    expect(pathProblem(`a/${'€'.repeat(86)}`)).toBe('has a segment longer than 255 bytes');
    expect(pathProblem(`${'é'.repeat(127)}x`)).toBeUndefined();
    expect(pathProblem(`${'é'.repeat(128)}`)).toBe('has a segment longer than 255 bytes');
    expect(pathProblem('x'.repeat(256))).toBe('has a segment longer than 255 bytes');
  });
});

// entriesByPath (src/domain/entries-by-path.ts): a state's entries by path, over the list itself
// when it is in path order, answering as a Map would whatever the order of the questions.
import { describe, expect, it } from 'vitest';
import { entriesByPath } from '../src/domain/entries-by-path.js';
import type { FileEntry } from '../src/domain/sync-state.js';

const entry = (path: string): FileEntry => ({ path, checksum: path.padEnd(32, '0'), size: path.length, modified_at: 1 });
const SORTED = ['a', 'b/c', 'b/d', 'e', 'z'].map(entry);

describe('entriesByPath', () => {
  for (const [name, files] of [
    ['in path order', SORTED],
    ['out of order', [...SORTED].reverse()],
  ] as const) {
    it(`answers as a Map of the same entries, ${name}`, () => {
      const map = new Map(files.map((f) => [f.path, f]));
      const byPath = entriesByPath(files);
      expect(byPath.size).toBe(5);
      // In order, backwards, repeated, and paths it does not hold.
      for (const path of ['a', 'b/c', 'b/d', 'e', 'z', 'z', 'e', 'a', 'b', 'b/c/x', '', 'zz', '0']) {
        expect(byPath.get(path)).toBe(map.get(path));
        expect(byPath.has(path)).toBe(map.has(path));
      }
      expect([...byPath]).toEqual([...map]);
      expect([...byPath.entries()]).toEqual([...map.entries()]);
      expect([...byPath.keys()]).toEqual([...map.keys()]);
      expect([...byPath.values()]).toEqual([...map.values()]);
      const seen: string[] = [];
      byPath.forEach((f, path, self) => {
        expect(self).toBe(byPath);
        expect(f.path).toBe(path);
        seen.push(path);
      });
      expect(seen).toEqual([...map.keys()]);
      byPath.clear();
      expect(byPath.size).toBe(0);
      expect(byPath.get('a')).toBeUndefined();
    });
  }

  it('holds no table beside a list in path order', () => {
    expect(entriesByPath(SORTED)).not.toBeInstanceOf(Map);
    expect(entriesByPath([entry('b'), entry('a')])).toBeInstanceOf(Map);
    expect(entriesByPath([entry('a'), entry('a')])).toBeInstanceOf(Map); // a duplicate: not strictly in order
    expect(entriesByPath([]).size).toBe(0);
  });
});

// The world of the prune tests (test/sync-prune.test.ts, test/sync-keep-versions.test.ts): a
// workspace folder pushing to a folder store, each push a version named by the clock it is given.
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { syncPush } from '../../src/sync/operations.js';
import type { SyncTarget } from '../../src/sync/stores/target.js';
import { configWith, depsFor, scratch, writeTree } from './sync-fixtures.js';

export const T0 = 1_700_000_000;
const at = (seconds: number) => () => seconds * 1000;

export function world(sync: Parameters<typeof configWith>[0] = {}) {
  const base = scratch('atlas-prune-');
  const store = join(base, 'store');
  const src = join(base, 'src');
  mkdirSync(src);
  const config = configWith({ store, ...sync });
  const target: SyncTarget = { root: src, tree: 'ws', workspace: 'ws' };
  const deps = (seconds = T0) => depsFor(config, join(base, 'home'), at(seconds));
  /** Pushes `files` as the version named `seconds`. */
  const push = async (seconds: number, files: Record<string, string>) => {
    writeTree(src, files);
    const pushed = await syncPush(target, await deps(seconds));
    expect(pushed.stats.version).toBe(String(seconds));
    return pushed;
  };
  const versions = (tree = 'ws') =>
    readdirSync(join(store, tree))
      .filter((n) => /^\d+$/.test(n))
      .sort();
  return { base, store, src, config, target, deps, push, versions };
}

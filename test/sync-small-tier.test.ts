// A sync of a folder whose last sync was small runs without V8's optimizing compiler (bin/atlas.cjs
// says why); one with no state, a large one, or a link in its place keeps V8's default.
// The real executable with V8's own trace of what it optimizes.
import { spawnSync } from 'node:child_process';
import { symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import { removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

beforeAll(() => ensureBuilt());
afterAll(() => removeScratch());

/** How many functions V8 compiled with TurboFan while `atlas sync ...args` ran (and its exit code). */
function optimized(args: string[], cwd: string, env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['--trace-opt', join(ROOT, 'bin', 'atlas.cjs'), 'sync', ...args], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, turbofan: (r.stdout.match(/^\[compiling method .*TURBOFAN/gm) ?? []).length, out: r.stdout + r.stderr };
}

describe('V8 tiers of a sync', () => {
  it('leaves TurboFan out only when the folder last synced few files', () => {
    const base = scratch('atlas-tier-');
    const folder = join(base, 'w');
    writeTree(folder, { 'a.txt': 'a', 'b/c.txt': 'c' });
    const env = { ATLAS_HOME: join(base, 'home'), ATLAS_SYNC_STORE: join(base, 'store') };

    // No state yet (a first push of a folder of unknown size): V8's default.
    const first = optimized(['push', '--dir', folder, '--workspace', 'w'], base, env);
    expect(first.code, first.out).toBe(0);
    expect(first.turbofan, first.out).toBeGreaterThan(0);
    // A small state: --dir and --dir=, relative to the current folder too.
    for (const [args, cwd] of [
      [['push', '--dir', folder, '--workspace', 'w'], base],
      [['status', `--dir=${folder}`, '--workspace', 'w'], base],
      [['pull', '--dir', '.', '--workspace', 'w', '--force'], folder],
    ] as const) {
      const small = optimized([...args], cwd, env);
      expect(small.code, small.out).toBe(0);
      expect(small.turbofan, small.out).toBe(0);
    }
    // A state of 3 MiB or more (about 14,000 files last time): the default again. Corrupt here, so
    // the sync says so and runs in full, which is all this needs.
    const state = join(folder, '.sandbox-state');
    writeFileSync(state, '{');
    truncateSync(state, 3 * 1024 * 1024);
    const large = optimized(['status', '--dir', folder, '--workspace', 'w'], base, env);
    expect(large.out).toContain('corrupt');
    expect(large.turbofan, large.out).toBeGreaterThan(0);
  });

  it('keeps the default for a link in place of the state', () => {
    const base = scratch('atlas-tier-link-');
    const folder = join(base, 'w');
    writeTree(folder, { 'a.txt': 'a', 'small-state': '{"version":"1.0","last_synced_at":1,"files":[]}' });
    symlinkSync('small-state', join(folder, '.sandbox-state'));
    const env = { ATLAS_HOME: join(base, 'home'), ATLAS_SYNC_STORE: join(base, 'store') };
    const linked = optimized(['status', '--dir', folder, '--workspace', 'w'], base, env);
    expect(linked.out).toContain('symbolic link');
    expect(linked.turbofan, linked.out).toBeGreaterThan(0);
  });
});

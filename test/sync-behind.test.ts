// The behind-the-store rule (issue 20): a push from a folder whose last sync is older than the
// store's newest version never replaces that newer work. Different files changed: combined at the
// file level. The same file changed on both sides: stored as a version that is not the newest,
// the files listed, exit 6; --force publishes. Retention, pulls and the cold start never take a
// conflict version for the newest. Folder store in process, and the built CLI for the exit code.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { mergeWithStore } from '../src/domain/sync-merge.js';
import type { FileEntry } from '../src/domain/sync-state.js';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { syncPrune } from '../src/sync/versions/prune.js';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => removeScratch());

/** Two machines, A and B, on one store, both at the first version. */
async function twoMachines(files: Record<string, string>) {
  const base = scratch('atlas-behind-');
  const config = configWith({ store: join(base, 'store') });
  const deps = () => depsFor(config, join(base, 'home'));
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const a = join(base, 'a');
  const b = join(base, 'b');
  writeTree(a, files);
  const first = await syncPush(target(a), await deps());
  await syncPull(target(b), await deps(), {});
  return {
    base,
    a,
    b,
    deps,
    target,
    first: first.stats.version!,
    push: async (root: string, force = false) => syncPush(target(root), await deps(), force ? { force } : {}),
  };
}

const e = (path: string, c: string): FileEntry => ({ path, checksum: c.repeat(32), size: 1, modified_at: 1 });

describe('behind the store', () => {
  it('merges at the file level: ours where we changed, theirs where only they did, a conflict where both did differently', () => {
    const base = [
      e('same', 'a'),
      e('mine', 'a'),
      e('theirs', 'a'),
      e('both-same', 'a'),
      e('both', 'a'),
      e('gone-there', 'a'),
      e('gone-here', 'a'),
    ];
    const ours = [
      e('same', 'a'),
      e('mine', 'b'),
      e('theirs', 'a'),
      e('both-same', 'c'),
      e('both', 'd'),
      e('gone-there', 'a'),
      e('new-here', 'e'),
    ];
    const theirs = [
      e('same', 'a'),
      e('mine', 'a'),
      e('theirs', 'f'),
      e('both-same', 'c'),
      e('both', 'f'),
      e('gone-here', 'a'),
      e('new-there', 'f'),
    ];
    const merge = mergeWithStore(ours, ['empty-here'], theirs, ['empty-there', 'old'], base, ['old']);
    expect(Object.fromEntries(merge.files.map((f) => [f.path, f.checksum[0]]))).toEqual({
      same: 'a',
      mine: 'b',
      theirs: 'f',
      'both-same': 'c',
      both: 'd',
      'new-here': 'e',
      'new-there': 'f',
    });
    expect(merge.conflicts).toEqual(['both']);
    expect(merge.fromStore).toEqual(['gone-there', 'new-there', 'theirs']);
    expect(merge.dirs).toEqual(['empty-here', 'empty-there']);
  });

  it('different files changed: the push combines them; nothing of the newer version is lost, and a pull brings it here', async () => {
    const m = await twoMachines({ 'a.txt': 'a1', 'b.txt': 'b1', 'gone.txt': 'g' });
    writeFileSync(join(m.a, 'a.txt'), 'a2');
    rmSync(join(m.a, 'gone.txt'));
    const fromA = await m.push(m.a);
    // B is behind: it changed only b.txt.
    writeFileSync(join(m.b, 'b.txt'), 'b2');
    const fromB = await m.push(m.b);
    expect(fromB.stats.notes.join()).toMatch(new RegExp(`behind version ${fromA.stats.version}: combined with its 2 change\\(s\\)`));
    const fresh = join(m.base, 'fresh');
    await syncPull(m.target(fresh), await m.deps(), {});
    expect(readTree(fresh)).toEqual({ 'a.txt': 'a2', 'b.txt': 'b2' });
    // B still has its own files until it pulls; its next push (another change) combines again.
    expect(readFileSync(join(m.b, 'a.txt'), 'utf8')).toBe('a1');
    writeTree(m.b, { 'c.txt': 'c' });
    await m.push(m.b);
    await syncPull(m.target(m.b), await m.deps(), { force: true });
    expect(readTree(m.b)).toEqual({ 'a.txt': 'a2', 'b.txt': 'b2', 'c.txt': 'c' });
    // A, behind B's versions now, changes a.txt again: combined the same way.
    writeFileSync(join(m.a, 'a.txt'), 'a3');
    await m.push(m.a);
    await syncPull(m.target(fresh), await m.deps(), { force: true });
    expect(readTree(fresh)).toEqual({ 'a.txt': 'a3', 'b.txt': 'b2', 'c.txt': 'c' });
  });

  it('the same file changed on both sides: stored as a version that is not the newest, listed, exit 6; --force publishes', async () => {
    const m = await twoMachines({ 'shared.txt': 'v1', 'other.txt': 'o1' });
    writeFileSync(join(m.a, 'shared.txt'), 'from A');
    writeFileSync(join(m.a, 'other.txt'), 'o2');
    const fromA = await m.push(m.a);
    writeFileSync(join(m.b, 'shared.txt'), 'from B');
    const error = await m.push(m.b).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AtlasError);
    expect(error).toMatchObject({
      exitCode: 6,
      message: expect.stringMatching(
        /is behind version \d+ of ws, and 1 file\(s\) changed both here and there; this push was stored as version \d+, which is not the newest:\n {2}shared.txt/,
      ),
      hint: expect.stringMatching(/--force/),
    });
    const versions = (await syncVersions(m.target(m.b), await m.deps())).versions;
    expect(versions.map((v) => v.status)).toEqual(['complete', 'complete', 'conflict']);
    expect(versions[2]!.problem).toMatch(new RegExp(`behind version ${fromA.stats.version} .*shared.txt`));
    // The newest is still A's: a pull gets it; B's work is in the conflict version, by name.
    const fresh = join(m.base, 'fresh');
    const pulled = await syncPull(m.target(fresh), await m.deps(), {});
    expect(pulled.stats.version).toBe(fromA.stats.version);
    expect(readTree(fresh)).toEqual({ 'shared.txt': 'from A', 'other.txt': 'o2' });
    const mine = join(m.base, 'mine');
    await syncPull(m.target(mine), await m.deps(), { version: versions[2]!.version });
    expect(readTree(mine)).toEqual({ 'shared.txt': 'from B', 'other.txt': 'o2' });
    // Retention keeps the newest complete version; the conflict version is newer, so it stays too.
    const pruned = await syncPrune(m.target(m.b), await m.deps(), { keep: 1 });
    expect(pruned.trees[0]!.kept).toEqual([fromA.stats.version]);
    expect(pruned.trees[0]!.removed.map((r) => r.version)).toEqual([m.first]);
    // Pulled into another folder to be resolved there, the conflict version pushes as the newest
    // (it is based on the version it conflicted with, and holds that version's other changes).
    writeFileSync(join(mine, 'shared.txt'), 'resolved');
    const published = await m.push(mine);
    expect(published.stats.notes.join()).not.toMatch(/behind/);
    await syncPull(m.target(fresh), await m.deps(), { force: true });
    expect(readTree(fresh)).toEqual({ 'shared.txt': 'resolved', 'other.txt': 'o2' });
    // --force from B (still behind): B's shared.txt wins, the other change is kept.
    const forced = await m.push(m.b, true);
    expect(forced.stats.notes.join()).toMatch(
      /--force: 1 file\(s\) changed here and in version \d+ were published as they are here: shared.txt/,
    );
    await syncPull(m.target(fresh), await m.deps(), { force: true });
    expect(readTree(fresh)).toEqual({ 'shared.txt': 'from B', 'other.txt': 'o2' });
  });

  it('the CLI exits 6 on a conflict and 0 with --force', async () => {
    const m = await twoMachines({ 'f.txt': '1' });
    writeFileSync(join(m.a, 'f.txt'), 'A');
    await m.push(m.a);
    writeFileSync(join(m.b, 'f.txt'), 'B');
    const run = (args: string[]) =>
      new Promise<{ code: number; stderr: string }>((done) => {
        const child = spawn(
          process.execPath,
          [join(ROOT, 'bin', 'atlas.cjs'), 'sync', 'push', '--dir', m.b, '--workspace', 'ws', ...args],
          {
            env: { ...process.env, ATLAS_HOME: join(m.base, 'home'), ATLAS_SYNC_STORE: join(m.base, 'store') },
          },
        );
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) => done({ code: code ?? -1, stderr }));
      });
    const conflict = await run([]);
    expect(conflict.code).toBe(6);
    expect(conflict.stderr).toMatch(/changed both here and there[\s\S]*f\.txt[\s\S]*hint: .*--force/);
    expect((await run(['--force'])).code).toBe(0);
    expect(existsSync(join(m.b, '.sandbox-state'))).toBe(true);
  }, 60_000);
});

// No torn version (issue 36): a writer, a real child process, rewrites the folder's files (a
// truncate then a write, sizes changing) throughout a run of pushes. Every version those pushes
// publish must pull, and every entry's size must be that of the bytes its hashes name. Before
// the fix a scan took a file's size from its lstat and its hashes from a later read, publishing
// e.g. {"size":0,"checksum":<of 20 KB>}: every pull of that version failed.

import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { blobFiles, configWith, depsFor, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';
import { startWriter, tornEntries } from './helpers/sync-stress.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  removeScratch();
});

describe('pushes while a writer rewrites the files', () => {
  it('every version published pulls, and every entry has its size and hashes from the same bytes', async () => {
    const base = scratch('atlas-torn-');
    const store = join(base, 'store');
    const root = join(base, 'ws');
    const files = 50;
    writeTree(root, Object.fromEntries(Array.from({ length: files }, (_, i) => [`f${i}`, 'x'.repeat(20_000)])));
    const config = configWith({ store });
    const target = (at: string): SyncTarget => ({ root: at, tree: 'ws', workspace: 'ws' });
    // Names one after another, in the past: every file the writer touches is newer than the last sync.
    let clock = 1_700_000_000;
    const deps = async () => depsFor(config, join(base, 'home'), () => (clock += 10) * 1000);
    await syncPush(target(root), await deps());
    const { child: writer, ready } = startWriter(root, files);
    children.push(writer);
    await ready;
    for (let i = 0; i < 12; i++) await syncPush(target(root), await deps());
    writer.kill('SIGKILL');
    const { versions } = await syncVersions(target(root), await deps());
    expect(versions.length).toBeGreaterThan(1);
    expect(versions.filter((v) => v.status !== 'complete')).toEqual([]);
    expect(versions.flatMap((v) => tornEntries(store, 'ws', v.version))).toEqual([]);
    for (const v of versions) {
      const into = join(base, `pull-${v.version}`);
      await syncPull(target(into), await deps(), { version: v.version });
    }
    expect(blobFiles(store, 'ws').length).toBeGreaterThan(0);
  }, 120_000);
});

describe('atlas sync versions checks each manifest against the stored contents', () => {
  it('marks a version damaged whose entry is torn, or whose content is gone, and names the file', async () => {
    const base = scratch('atlas-torn-check-');
    const store = join(base, 'store');
    const root = join(base, 'ws');
    writeTree(root, { small: 'x'.repeat(20_000), big: Buffer.alloc(2 * 1024 * 1024, 'b'), empty: '' });
    const config = configWith({ store });
    const target: SyncTarget = { root, tree: 'ws', workspace: 'ws' };
    let clock = 1_700_000_000;
    const deps = async () => depsFor(config, join(base, 'home'), () => (clock += 10) * 1000);
    await syncPush(target, await deps());
    const { version, status } = (await syncVersions(target, await deps())).versions[0]!;
    expect(status).toBe('complete');
    const manifest = join(store, 'ws', version, '.sandbox-state');
    const original = readFileSync(manifest, 'utf8');
    const edit = (change: (files: Record<string, unknown>[]) => void) => {
      const state = JSON.parse(original) as { files: Record<string, unknown>[] };
      change(state.files);
      writeFileSync(manifest, JSON.stringify(state));
    };
    const problemOf = async () => (await syncVersions(target, await deps())).versions[0]!;
    const cases: [string, (files: Record<string, unknown>[]) => void, RegExp][] = [
      [
        'a size of 0 beside the hashes of 20 KB (the torn entry the issue saw)',
        (files) => void (files.find((f) => f['path'] === 'small')!['size'] = 0),
        /"small" has size 0 but the hashes of some bytes/,
      ],
      [
        'a packed entry past the end of its pack',
        (files) => void (files.find((f) => f['path'] === 'small')!['size'] = 1_000_000),
        /"small" lies past the end of its pack/,
      ],
      [
        'a blob of another size',
        (files) => void (files.find((f) => f['path'] === 'big')!['size'] = 5),
        /"big" has size 5 but its content is 2097152 bytes/,
      ],
      [
        'an empty file with the hashes of bytes',
        (files) => void (files.find((f) => f['path'] === 'empty')!['size'] = 7),
        /"empty" has size 7 but the hashes of no bytes/,
      ],
    ];
    for (const [what, change, expected] of cases) {
      edit(change);
      const v = await problemOf();
      expect(v.status, what).toBe('damaged');
      expect(v.problem, what).toMatch(expected);
    }
    writeFileSync(manifest, original);
    expect((await problemOf()).status).toBe('complete');
    const big = JSON.parse(original).files.find((f: { path: string }) => f.path === 'big').sha256 as string;
    rmSync(join(store, 'ws', '.blobs', big.slice(0, 2), big));
    expect((await problemOf()).problem).toMatch(/has 1 entry no pull can restore: "big" names a content the store does not hold/);
  });
});

// Push and pull through a directory store: the pull rules of seed 001 §3-4, versions, hard links,
// deletions and their safety, max_delete, corrupt state, conflicts, locking, a task's folder.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { parseWhole } from '../src/domain/sync-state-parse.js';
import { syncPull, syncPush, syncStatus, syncVersions } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { blobFiles, configWith, depsFor, readStoredVersion, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

const dir = scratch;
afterAll(() => {
  removeScratch();
});

function setup(sync: Parameters<typeof configWith>[0] = {}) {
  const home = dir('atlas-home-');
  const store = join(home, 'store');
  const config = configWith({ store, ...sync });
  const deps = (now?: () => number) => depsFor(config, home, now);
  const target = (root: string, name = 'ws'): SyncTarget => ({ root, tree: name, workspace: name });
  return { home, store, config, deps, target };
}

const later = (hours: number) => () => Date.now() + hours * 3_600_000;

describe('directory store', () => {
  it('pushes, then pulls in full into an empty folder, with the seed state file and mtimes kept', async () => {
    const s = setup();
    const src = dir();
    writeTree(src, { 'a.txt': 'alpha', 'sub/deep/b.txt': 'beta', 'empty.bin': '' });
    utimesSync(join(src, 'a.txt'), 1_600_000_000, 1_600_000_000);
    const pushed = await syncPush(s.target(src), await s.deps());
    expect(pushed.stats).toMatchObject({ direction: 'push', files_uploaded: 3, files_reused: 0, bytes_transferred: 9 });
    const dest = join(dir(), 'new-folder');
    const pulled = await syncPull(s.target(dest), await s.deps(), {});
    expect(pulled.stats).toMatchObject({
      direction: 'pull',
      version: pushed.stats.version,
      files_downloaded: 3,
      files_deleted: 0,
      files_skipped: 0,
      bytes_transferred: 9,
    });
    expect(readTree(dest)).toEqual(readTree(src));
    expect(statSync(join(dest, 'a.txt')).mtimeMs).toBe(1_600_000_000_000);
    const state = parseWhole(readFileSync(join(dest, '.sandbox-state'), 'utf8'));
    expect(state.ok && state.state.files.map((f) => [f.path, f.checksum, f.size])).toEqual([
      ['a.txt', '2c1743a391305fbf367df8e4f069f9f9', 5],
      ['empty.bin', 'd41d8cd98f00b204e9800998ecf8427e', 0],
      ['sub/deep/b.txt', '987bcab01b929eb2c07877b224215c92', 4],
    ]);
    expect(existsSync(join(s.store, 'ws', pushed.stats.version!, '.sandbox-state'))).toBe(true);
  });

  it("keeps what it stores private (folders 0700, files 0600), whatever the files' own modes", async () => {
    const s = setup();
    const src = dir();
    writeTree(src, { 'README.md': 'readme', 'big.bin': 'x'.repeat(1024 * 1024 + 1), 'sub/.env': 'TOKEN=secret' });
    chmodSync(join(src, 'README.md'), 0o644);
    const pushed = await syncPush(s.target(src), await s.deps());
    const modes = (path: string): string[] =>
      readdirSync(path, { withFileTypes: true }).flatMap((d) => {
        const child = join(path, d.name);
        const mode = (statSync(child).mode & 0o777).toString(8);
        return [`${d.isDirectory() ? 'dir' : 'file'} ${mode}`, ...(d.isDirectory() ? modes(child) : [])];
      });
    expect(statSync(s.store).mode & 0o777).toBe(0o700);
    expect([...new Set(modes(s.store))].sort()).toEqual(['dir 700', 'file 600']);
    expect(pushed.stats.files_uploaded).toBe(3);
  });

  it('a push where nothing changed makes no version; a new version is a manifest, each content stored once, in a pack named by its SHA-256', async () => {
    const s = setup();
    const src = dir();
    writeTree(src, { 'keep.txt': 'same', 'edit.txt': 'v1', 'old-name.txt': 'moved content' });
    const first = await syncPush(s.target(src), await s.deps());
    const noop = await syncPush(s.target(src), await s.deps());
    expect(noop.stats).toMatchObject({ version: null, files_skipped: 3, bytes_transferred: 0 });
    expect(noop.stats.notes.join()).toContain('no new version');
    writeFileSync(join(src, 'edit.txt'), 'v2!');
    rmSync(join(src, 'old-name.txt'));
    writeTree(src, { 'new-name.txt': 'moved content' });
    const second = await syncPush(s.target(src), await s.deps());
    expect(second.stats).toMatchObject({ files_uploaded: 1, files_reused: 2, bytes_transferred: 3 });
    const v1 = join(s.store, 'ws', first.stats.version!);
    const v2 = join(s.store, 'ws', second.stats.version!);
    expect(readdirSync(v1)).toEqual(['.sandbox-state']);
    expect(readdirSync(v2)).toEqual(['.sandbox-state']);
    // One pack per push that sent something: 'same', 'v1' and 'moved content', then 'v2!' alone.
    const packs = blobFiles(s.store, 'ws');
    expect(packs.map((p) => statSync(p).size).sort((a, b) => a - b)).toEqual([3, 19]);
    expect(packs.map((p) => readFileSync(p, 'utf8')).join()).toContain('v2!');
    for (const p of packs) expect(basename(p)).toBe(createHash('sha256').update(readFileSync(p)).digest('hex'));
    expect(readStoredVersion(s.store, 'ws', second.stats.version!)).toEqual({
      'keep.txt': 'same',
      'edit.txt': 'v2!',
      'new-name.txt': 'moved content',
    });
    const versions = await syncVersions(s.target(src), await s.deps());
    expect(versions.versions.map((v) => [v.version, v.files, v.status])).toEqual([
      [first.stats.version, 3, 'complete'],
      [second.stats.version, 3, 'complete'],
    ]);
  });

  it('skips a fresh pull, runs an incremental one when stale or forced, and pulls a named version', async () => {
    const s = setup();
    const src = dir();
    const dest = dir();
    writeTree(src, { 'f.txt': 'one', 'g.txt': 'same' });
    const v1 = (await syncPush(s.target(src), await s.deps())).stats.version!;
    await syncPull(s.target(dest), await s.deps(), {});
    writeFileSync(join(src, 'f.txt'), 'two');
    const v2 = (await syncPush(s.target(src), await s.deps())).stats.version!;
    const fresh = await syncPull(s.target(dest), await s.deps(), {});
    expect(fresh.stats.version).toBeNull();
    expect(fresh.stats.notes[0]).toMatch(/within sync.stale_threshold/);
    expect(readTree(dest)['f.txt']).toBe('one');
    const stale = await syncPull(s.target(dest), await s.deps(later(2)), {});
    expect(stale.stats).toMatchObject({ version: v2, files_downloaded: 1, files_skipped: 1, bytes_transferred: 3 });
    const back = await syncPull(s.target(dest), await s.deps(), { version: v1 });
    expect(back.stats).toMatchObject({ version: v1, files_downloaded: 1 });
    expect(readTree(dest)['f.txt']).toBe('one');
    const forced = await syncPull(s.target(dest), await s.deps(), { force: true });
    expect(forced.stats.version).toBe(v2);
    await expect(syncPull(s.target(dest), await s.deps(), { version: '123' })).rejects.toThrow(/version 123 of ws is not in/);
  });

  it('deletes only files the last sync tracked and nobody changed; files made here stay', async () => {
    const s = setup({ max_delete: '100%' });
    const src = dir();
    const dest = dir();
    writeTree(src, { 'gone.txt': 'x', 'dir/gone-too.txt': 'y', 'edited.txt': 'z', 'stays.txt': 's' });
    await syncPush(s.target(src), await s.deps());
    await syncPull(s.target(dest), await s.deps(), {});
    writeTree(dest, { 'mine.txt': 'made here', 'edited.txt': 'changed here' });
    for (const f of ['gone.txt', 'dir/gone-too.txt', 'edited.txt']) rmSync(join(src, f));
    await syncPush(s.target(src), await s.deps());
    const pulled = await syncPull(s.target(dest), await s.deps(), { force: false, version: undefined });
    // Fresh: nothing. Stale: deletions.
    expect(pulled.stats.version).toBeNull();
    const stale = await syncPull(s.target(dest), await s.deps(later(2)), {});
    expect(stale.stats.files_deleted).toBe(2);
    expect(stale.stats.notes.join()).toMatch(/kept edited.txt/);
    expect(readTree(dest)).toEqual({ 'edited.txt': 'changed here', 'mine.txt': 'made here', 'stays.txt': 's' });
    expect(existsSync(join(dest, 'dir'))).toBe(false);
  });

  it('stops before changing anything when deletions pass sync.max_delete, unless --force', async () => {
    const s = setup();
    const src = dir();
    const dest = dir();
    writeTree(src, Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, `${i}`])));
    await syncPush(s.target(src), await s.deps());
    await syncPull(s.target(dest), await s.deps(), {});
    for (let i = 0; i < 6; i++) rmSync(join(src, `f${i}.txt`));
    writeTree(src, { 'new.txt': 'n' });
    await syncPush(s.target(src), await s.deps());
    const before = readTree(dest, { all: true });
    await expect(syncPull(s.target(dest), await s.deps(later(2)), {})).rejects.toThrow(
      /would delete 6 of the 10 files .* sync.max_delete \(50%\); nothing was changed/,
    );
    expect(readTree(dest, { all: true })).toEqual(before);
    const forced = await syncPull(s.target(dest), await s.deps(), { force: true });
    expect(forced.stats).toMatchObject({ files_deleted: 6, files_downloaded: 1 });
    const bad = await depsFor(configWith({ store: s.store, max_delete: 'lots' }), s.home);
    await syncStatus(s.target(dest), bad);
    writeTree(src, { 'x.txt': 'x' });
    await syncPush(s.target(src), bad);
    await syncPull(s.target(dest), { ...bad, now: later(2) }, {});
    expect(bad.warnings.join()).toMatch(/sync.max_delete: expected a count or a percentage/);
  });

  it('an empty stored version never deletes anything', async () => {
    const s = setup({ max_delete: '100%' });
    const src = dir();
    const dest = dir();
    writeTree(src, { 'a.txt': 'a' });
    await syncPush(s.target(src), await s.deps());
    await syncPull(s.target(dest), await s.deps(), {});
    rmSync(join(src, 'a.txt'));
    const empty = await syncPush(s.target(src), await s.deps());
    expect(empty.stats.version).not.toBeNull();
    const pulled = await syncPull(s.target(dest), await s.deps(), { force: true });
    expect(pulled.stats.files_deleted).toBe(0);
    expect(pulled.stats.notes.join()).toMatch(/is empty: nothing was deleted/);
    expect(readTree(dest)).toEqual({ 'a.txt': 'a' });
  });

  it('a corrupt local state is warned about, the pull runs in full and writes it again', async () => {
    const s = setup();
    const src = dir();
    const dest = dir();
    writeTree(src, { 'a.txt': 'a', 'b.txt': 'b' });
    await syncPush(s.target(src), await s.deps());
    writeTree(dest, { '.sandbox-state': '{"version":"1.0","files":[ broken', 'a.txt': 'a' });
    const deps = await s.deps();
    const pulled = await syncPull(s.target(dest), deps, {});
    expect(deps.warnings.join()).toMatch(/\.sandbox-state is corrupt .* full sync/);
    expect(pulled.stats).toMatchObject({ files_downloaded: 1, files_skipped: 1 });
    const state = parseWhole(readFileSync(join(dest, '.sandbox-state'), 'utf8'));
    expect(state.ok && state.state.files.length).toBe(2);
    writeFileSync(join(dest, '.sandbox-state'), '{"version":"9.0","last_synced_at":1,"files":[]}');
    await expect(syncPull(s.target(dest), await s.deps(), {})).rejects.toThrow(/newer than this atlas understands/);
  });

  it('refuses to overwrite files changed here unless forced', async () => {
    const s = setup();
    const src = dir();
    const dest = dir();
    writeTree(src, { 'a.txt': 'from store' });
    writeTree(dest, { 'a.txt': 'my own work' });
    await syncPush(s.target(src), await s.deps());
    await expect(syncPull(s.target(dest), await s.deps(), {})).rejects.toThrow(
      /1 file\(s\) here differ .*\n\s+"a.txt" exists here and was never synced/,
    );
    expect(readTree(dest)).toEqual({ 'a.txt': 'my own work' });
    const status = await syncStatus(s.target(dest), await s.deps());
    expect(status.pull.conflicts).toEqual(['a.txt']);
    await syncPull(s.target(dest), await s.deps(), { force: true });
    expect(readTree(dest)).toEqual({ 'a.txt': 'from store' });
  });

  it('status says what push and pull would do and changes nothing', async () => {
    const s = setup();
    const src = dir();
    writeTree(src, { 'a.txt': 'aaaa', 'b.txt': 'b' });
    const before = readTree(src, { all: true });
    const first = await syncStatus(s.target(src), await s.deps());
    expect(first).toMatchObject({ latest_version: null, last_synced_at: null, push: { new_version: true, upload: 2, upload_bytes: 5 } });
    expect(first.pull.skipped_because).toMatch(/has no version/);
    expect(readTree(src, { all: true })).toEqual(before);
    expect(existsSync(s.store)).toBe(true);
    await syncPush(s.target(src), await s.deps());
    const after = await syncStatus(s.target(src), await s.deps());
    expect(after.push).toMatchObject({ new_version: false, upload: 0, reuse: 2 });
    expect(after.pull.skipped_because).toMatch(/within sync.stale_threshold/);
  });

  it('two syncs of one folder at once are serialized by the lock on .sandbox-state', async () => {
    const s = setup();
    const src = dir();
    const dest = dir();
    writeTree(src, Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`d${i % 7}/f${i}.txt`, `content ${i}`.repeat(50)])));
    await syncPush(s.target(src), await s.deps());
    const results = await Promise.all([
      syncPull(s.target(dest), await s.deps(), {}),
      syncPull(s.target(dest), await s.deps(), {}),
      syncPush(s.target(src), await s.deps()),
    ]);
    const downloads = results
      .slice(0, 2)
      .map((r) => r.stats.files_downloaded)
      .sort();
    expect(downloads).toEqual([0, 200]);
    expect(readTree(dest)).toEqual(readTree(src));
    expect(existsSync(join(dest, '.sandbox-state.lock'))).toBe(false);
  });

  it('skips symlinks, .git and sync.exclude on push; a task push stores its folder without owner.json', async () => {
    const s = setup({ exclude: ['*.log', 'build/'] });
    const src = dir();
    writeTree(src, { 'a.txt': 'a', 'x.log': 'l', 'build/out.js': 'o', '.git/HEAD': 'ref', 'sub/.git': 'gitdir: x' });
    symlinkSync('/etc', join(src, 'etc-link'));
    const taskDir = dir();
    writeTree(taskDir, {
      'task.json': '{}',
      'hook.json': '{}',
      'HOOK.md': '# h',
      'owner.json': '{}',
      'artifacts/out.txt': 'o',
      'conversations/c1/messages.jsonl': '{}\n',
    });
    mkdirSync(join(taskDir, 'hook.json.lock'));
    const pushed = await syncPush({ ...s.target(src), task: { id: 'task-20260101-000000', dir: taskDir } }, await s.deps());
    expect(pushed.stats.notes.join()).toMatch(/1 symlink\(s\) pointing outside the folder not synced: .*etc-link/);
    expect(readStoredVersion(s.store, 'ws', pushed.stats.version!)).toEqual({ 'a.txt': 'a' });
    expect(Object.keys(readStoredVersion(s.store, 'ws/.tasks/task-20260101-000000', pushed.task!.stats.version!)).sort()).toEqual([
      'HOOK.md',
      'artifacts/out.txt',
      'conversations/c1/messages.jsonl',
      'hook.json',
      'task.json',
    ]);
  });

  it('reports a store folder it cannot write with the fix', async () => {
    if (process.getuid?.() === 0) return; // root writes anywhere
    const s = setup();
    mkdirSync(s.store);
    chmodSync(s.store, 0o500);
    const src = dir();
    writeTree(src, { 'a.txt': 'a' });
    await expect(syncPush(s.target(src), await s.deps())).rejects.toMatchObject({
      hint: expect.stringMatching(/may read and write the store folder/),
    });
    chmodSync(s.store, 0o700);
  });

  it('a damaged newest version stops a pull (and is passed over by a push), and is refused by name', async () => {
    const s = setup();
    const src = dir();
    writeTree(src, { 'a.txt': 'a' });
    const good = (await syncPush(s.target(src), await s.deps())).stats.version!;
    writeTree(join(s.store, 'ws', '9999999999'), { '.sandbox-state': 'garbage' });
    writeTree(join(s.store, 'ws', '9999999998'), { 'a.txt': 'unfinished push' });
    await expect(syncPull(s.target(dir()), await s.deps(), {})).rejects.toThrow(
      /version 9999999999 of ws .* has a corrupt \.sandbox-state .*refused, nothing was changed/,
    );
    expect((await syncPull(s.target(dir()), await s.deps(), { version: good })).stats.version).toBe(good);
    const deps = await s.deps();
    writeTree(src, { 'b.txt': 'b' });
    const pushed = await syncPush(s.target(src), deps);
    expect(deps.warnings.join()).toMatch(/passing over version 9999999999 .* corrupt/);
    expect(pushed.stats).toMatchObject({ version: '10000000000', files_uploaded: 1, files_reused: 1 });
    await expect(syncPull(s.target(dir()), await s.deps(), { version: '9999999999' })).rejects.toThrow(/corrupt .*refused/);
    await expect(syncPull(s.target(dir()), await s.deps(), { version: '9999999998' })).rejects.toBeInstanceOf(AtlasError);
  });
});

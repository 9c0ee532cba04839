// What a push stores and a pull restores (issue 20): executable bits, empty folders, links that
// stay inside the folder (and only those), user files named like atlas's temp and state files,
// versions stored before content addressing, and a hostile manifest's blob names, modes and links.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { syncPull, syncPush } from '../src/sync/operations.js';
import type { SyncTarget } from '../src/sync/stores/target.js';
import { configWith, depsFor, readStoredVersion, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';

afterAll(() => removeScratch());

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

function world() {
  const base = scratch('atlas-fidelity-');
  const store = join(base, 'store');
  const config = configWith({ store });
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const deps = () => depsFor(config, join(base, 'home'));
  const folder = (name: string) => join(base, name);
  return { base, store, target, deps, folder };
}

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('fidelity', () => {
  it('executable bits and empty folders come back; a mode changed alone makes a new version', async () => {
    const w = world();
    const src = w.folder('src');
    writeTree(src, { 'run.sh': '#!/bin/sh\necho hi\n', 'data.txt': 'plain' });
    chmodSync(join(src, 'run.sh'), 0o755);
    mkdirSync(join(src, 'empty/nested'), { recursive: true });
    mkdirSync(join(src, 'logs'));
    await syncPush(w.target(src), await w.deps());
    const dest = w.folder('dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(modeOf(join(dest, 'run.sh'))).toBe(0o755);
    expect(modeOf(join(dest, 'data.txt'))).toBe(0o644);
    expect(statSync(join(dest, 'empty/nested')).isDirectory()).toBe(true);
    expect(readdirSync(join(dest, 'logs'))).toEqual([]);
    // chmod +x alone on the first machine: a new version, and the pull sets the bit without a download.
    chmodSync(join(src, 'data.txt'), 0o700);
    const pushed = await syncPush(w.target(src), await w.deps());
    expect(pushed.stats).toMatchObject({ files_uploaded: 0, bytes_transferred: 0 });
    expect(pushed.stats.version).not.toBeNull();
    const pulled = await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(pulled.stats.files_downloaded).toBe(0);
    expect(modeOf(join(dest, 'data.txt'))).toBe(0o700);
  });

  it('stores links that stay inside as links and restores them; leaves out links that point outside', async () => {
    const w = world();
    const src = w.folder('src');
    writeTree(src, { 'docs/real.md': 'the doc', 'bin/tool': 'x' });
    symlinkSync('docs/real.md', join(src, 'README.md'));
    symlinkSync('../docs', join(src, 'bin/docs'));
    symlinkSync('/etc/passwd', join(src, 'passwd'));
    symlinkSync('../../outside', join(src, 'bin/up'));
    const pushed = await syncPush(w.target(src), await w.deps());
    expect(pushed.stats.notes.join()).toMatch(/2 symlink\(s\) pointing outside the folder not synced: bin\/up, passwd/);
    expect(readStoredVersion(w.store, 'ws', pushed.stats.version!)).toEqual({
      'README.md': '-> docs/real.md',
      'bin/docs': '-> ../docs',
      'bin/tool': 'x',
      'docs/real.md': 'the doc',
    });
    const dest = w.folder('dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(readlinkSync(join(dest, 'README.md'))).toBe('docs/real.md');
    expect(readlinkSync(join(dest, 'bin/docs'))).toBe('../docs');
    expect(readFileSync(join(dest, 'README.md'), 'utf8')).toBe('the doc');
    expect(existsSync(join(dest, 'passwd'))).toBe(false);
    // A link retargeted on the first machine is retargeted here; one removed there is removed here.
    const { rmSync } = await import('node:fs');
    rmSync(join(src, 'README.md'));
    symlinkSync('bin/tool', join(src, 'README.md'));
    rmSync(join(src, 'bin/docs'));
    await syncPush(w.target(src), await w.deps());
    await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(readlinkSync(join(dest, 'README.md'))).toBe('bin/tool');
    expect(existsSync(join(dest, 'bin/docs'))).toBe(false);
    expect(lstatSync(join(dest, 'docs/real.md')).isFile()).toBe(true);
  });

  it('leaves out named pipes and sockets, and says so; the rest of the folder is pushed', async () => {
    const w = world();
    const src = w.folder('src');
    writeTree(src, { 'data.txt': 'data', 'run/keep.txt': 'kept' });
    execFileSync('mkfifo', [join(src, 'run/queue')]);
    const socket = createServer().listen(join(src, 'run/agent.sock'));
    await new Promise((r) => socket.once('listening', r));
    try {
      const pushed = await syncPush(w.target(src), await w.deps());
      expect(pushed.stats.notes.join()).toMatch(
        /2 named pipe\(s\), socket\(s\) or device\(s\) not synced \(they hold no content to store\): run\/agent.sock, run\/queue/,
      );
      expect(readStoredVersion(w.store, 'ws', pushed.stats.version!)).toEqual({ 'data.txt': 'data', 'run/keep.txt': 'kept' });
    } finally {
      await new Promise((r) => socket.close(r));
    }
  });

  it("user files named like atlas's temp or state files are synced, and never deleted by a push or pull", async () => {
    const w = world();
    const src = w.folder('src');
    const mine = {
      '.atlas-sync-1-2.tmp': 'my notes',
      'sub/.atlas-sync-x.tmp': 'mine too',
      '.sandbox-state-notes': 'also mine',
      'sub/.sandbox-state': 'a file of mine in a subfolder',
      'a.txt': 'a',
    };
    writeTree(src, mine);
    const pushed = await syncPush(w.target(src), await w.deps());
    expect(readStoredVersion(w.store, 'ws', pushed.stats.version!)).toEqual(mine);
    expect(readTree(src)).toEqual(mine);
    const dest = w.folder('dest');
    await syncPull(w.target(dest), await w.deps(), {});
    expect(readTree(dest)).toEqual(mine);
    // The pull's own temp folder is gone once it is done.
    expect(
      readdirSync(dest)
        .filter((n) => n.startsWith('.sandbox-state'))
        .sort(),
    ).toEqual(['.sandbox-state', '.sandbox-state-notes']);
  });

  it('pulls a version stored in the old full-copy layout; the next push stores blobs and pulls back', async () => {
    const w = world();
    const old = join(w.store, 'ws', '1700000000');
    writeTree(old, { 'a.txt': 'alpha', 'd/b.txt': 'beta' });
    writeFileSync(
      join(old, '.sandbox-state'),
      JSON.stringify({
        version: '1.0',
        last_synced_at: 1700000000,
        files: [
          { path: 'a.txt', checksum: md5('alpha'), size: 5, modified_at: 1700000000 },
          { path: 'd/b.txt', checksum: md5('beta'), size: 4, modified_at: 1700000000 },
        ],
      }),
    );
    const here = w.folder('here');
    const pulled = await syncPull(w.target(here), await w.deps(), {});
    expect(pulled.stats).toMatchObject({ version: '1700000000', files_downloaded: 2 });
    expect(readTree(here)).toEqual({ 'a.txt': 'alpha', 'd/b.txt': 'beta' });
    writeTree(here, { 'c.txt': 'new' });
    const pushed = await syncPush(w.target(here), await w.deps());
    expect(pushed.stats).toMatchObject({ files_uploaded: 3 });
    expect(readdirSync(join(w.store, 'ws', pushed.stats.version!))).toEqual(['.sandbox-state']);
    const again = w.folder('again');
    await syncPull(w.target(again), await w.deps(), {});
    expect(readTree(again)).toEqual({ 'a.txt': 'alpha', 'd/b.txt': 'beta', 'c.txt': 'new' });
    // The old version still pulls, by name.
    const older = await syncPull(w.target(again), await w.deps(), { version: '1700000000' });
    expect(older.stats.files_deleted).toBe(1);
  });

  it('a hostile manifest: a blob whose bytes do not match, a link out of the folder, a setuid mode and a bad blob name are refused', async () => {
    const w = world();
    const version = join(w.store, 'ws', '1700000000');
    const manifest = (files: object[], extra: object = {}) => {
      mkdirSync(version, { recursive: true });
      writeFileSync(join(version, '.sandbox-state'), JSON.stringify({ version: '1.0', last_synced_at: 1, files, ...extra }));
    };
    // The blob named for "good" holds other bytes.
    writeTree(join(w.store, 'ws', '.blobs', sha('good').slice(0, 2)), { [sha('good')]: 'evil' });
    manifest([{ path: 'a.txt', checksum: md5('good'), size: 4, modified_at: 1, sha256: sha('good') }]);
    const dest = w.folder('dest');
    await expect(syncPull(w.target(dest), await w.deps(), {})).rejects.toThrow(/a\.txt in version 1700000000 .*does not match/);
    expect(existsSync(join(dest, 'a.txt'))).toBe(false);
    // A link out of the folder is not restored (noted); the rest is.
    writeTree(join(w.store, 'ws', '.blobs', sha('ok').slice(0, 2)), { [sha('ok')]: 'ok' });
    manifest([
      { path: 'ok.txt', checksum: md5('ok'), size: 2, modified_at: 1, sha256: sha('ok') },
      { path: 'out', checksum: md5('/etc'), size: 4, modified_at: 1, link: '/etc' },
      { path: 'up', checksum: md5('../x'), size: 4, modified_at: 1, link: '../x' },
    ]);
    const pulled = await syncPull(w.target(dest), await w.deps(), { force: true });
    expect(pulled.stats.notes.join()).toMatch(/2 link\(s\) pointing outside the folder not restored: out, up/);
    expect(readdirSync(dest).sort()).toEqual(['.sandbox-state', 'ok.txt']);
    for (const bad of [
      { path: 'x', checksum: md5('ok'), size: 2, modified_at: 1, sha256: sha('ok'), mode: 0o4755 },
      { path: 'x', checksum: md5('ok'), size: 2, modified_at: 1, sha256: '../../../etc/passwd' },
      { path: 'x', checksum: md5('ok'), size: 2, modified_at: 1, sha256: sha('ok'), link: 'ok.txt' },
    ]) {
      manifest([bad]);
      await expect(syncPull(w.target(w.folder(`d${Math.random()}`)), await w.deps(), {})).rejects.toThrow(/corrupt \.sandbox-state/);
    }
    manifest([], { dirs: ['../escape'] });
    await expect(syncPull(w.target(w.folder('e')), await w.deps(), {})).rejects.toThrow(/"\.\.\/escape" has a "\.\." segment/);
  });
});

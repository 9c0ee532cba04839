// A folder store its reader may not write (a shared, read-only copy) and a destination its user
// may not write (issue 36, item 7). Before: every pull, versions and export of a read-only store
// failed on the store's write check, and a destination not writable was reported as a lock held
// by another process. A read-only folder (0555) an earlier pull restored made a later pull that
// writes inside it fail (EACCES): it is opened for the pull, then given back its bits. The CLI runs as `nobody` (root may write anything), from a copy of the build
// `nobody` may read, as in test/sync-unreadable.test.ts.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncPush } from '../src/sync/operations.js';
import { ensureBuilt, ROOT } from './helpers/engine-fixtures.js';
import { configWith, depsFor, readTree, removeScratch, scratch, writeTree } from './helpers/sync-fixtures.js';
import { cliCopyForNobody } from './helpers/sync-nobody.js';

const asRoot = process.getuid?.() === 0;
const id = (flag: string) => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout.trim());
const nobody = asRoot ? { uid: id('-u'), gid: id('-g') } : undefined;
const skip = !nobody
  ? 'not run as root: the test needs a second user to read a store it may not write'
  : spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']).status !== 0
    ? `runuser -u nobody cannot run ${process.execPath}`
    : undefined;
let cli = join(ROOT, 'bin', 'atlas.cjs');

beforeAll(() => {
  ensureBuilt();
  if (skip) return;
  cli = cliCopyForNobody();
});
afterAll(() => removeScratch());

/** Readable by everyone, writable by its owner (root) alone. */
function readOnlyForOthers(path: string): void {
  chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) readOnlyForOthers(join(path, name));
}

function sync(args: string[], env: Record<string, string>) {
  const r = spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, cli, 'sync', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

async function world() {
  const base = scratch('atlas-readonly-store-');
  chmodSync(base, 0o755);
  const store = join(base, 'store');
  let clock = 1_700_000_000;
  const deps = depsFor(configWith({ store }), join(base, 'root-home'), () => (clock += 10) * 1000);
  writeTree(join(base, 'src'), { 'a.txt': 'a', 'b/c.txt': 'c' });
  await syncPush({ root: join(base, 'src'), tree: 'w', workspace: 'w' }, await deps);
  readOnlyForOthers(store);
  const home = join(base, 'home');
  mkdirSync(home, { mode: 0o700 });
  chownSync(home, nobody!.uid, nobody!.gid);
  const mine = join(base, 'mine');
  mkdirSync(mine, { mode: 0o755 });
  chownSync(mine, nobody!.uid, nobody!.gid);
  return { base, store, mine, env: { ATLAS_HOME: home, ATLAS_SYNC_STORE: store } };
}

describe.skipIf(skip !== undefined)(`a read-only folder store${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('is read by versions, pull and export of a user who cannot write it, and a push says it cannot write', async () => {
    const w = await world();
    const versions = sync(['versions', '--workspace', 'w', '--json'], w.env);
    expect(versions.code, versions.out).toBe(0);
    expect(JSON.parse(versions.out).versions).toHaveLength(1);

    const pulled = sync(['pull', '--dir', join(w.mine, 'dest'), '--workspace', 'w'], w.env);
    expect(pulled.code, pulled.out).toBe(0);
    expect(readTree(join(w.mine, 'dest'))).toEqual({ 'a.txt': 'a', 'b/c.txt': 'c' });

    const exported = sync(['export', '--workspace', 'w', join(w.mine, 'plain')], w.env);
    expect(exported.code, exported.out).toBe(0);
    expect(readTree(join(w.mine, 'plain'))).toEqual({ 'a.txt': 'a', 'b/c.txt': 'c' });

    const pushed = sync(['push', '--dir', join(w.mine, 'dest'), '--workspace', 'w', '--force'], w.env);
    expect(pushed.out).toMatch(/permission denied|cannot (use|write)/i);
    expect(pushed.code).not.toBe(0);
  });

  it('a destination its user may not write is named as not writable, not as a lock held elsewhere', async () => {
    const w = await world();
    const closed = join(w.base, 'closed');
    mkdirSync(closed, { mode: 0o755 });
    const pulled = sync(['pull', '--dir', closed, '--workspace', 'w'], w.env);
    expect(pulled.code, pulled.out).not.toBe(0);
    expect(pulled.out).toContain(`${closed} is not writable`);
    expect(pulled.out).not.toMatch(/another atlas process|stale/);
  });
});

describe.skipIf(skip !== undefined)(`a read-only folder in the destination${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('a later pull writes, deletes and makes folders inside a 0555 folder, which stays 0555', async () => {
    const w = await world();
    const env = { ...w.env, ATLAS_SYNC_STORE: join(w.mine, 'store') };
    const src = join(w.mine, 'src');
    const dest = join(w.mine, 'dest');
    const ro = (root: string) => join(root, 'ro');
    const as = (args: string[]) => {
      const r = sync(args, env);
      expect(r.code, r.out).toBe(0);
    };
    writeTree(src, { 'ro/r.txt': 'one', 'ro/gone.txt': 'gone', 'top.txt': 't' });
    chmodSync(src, 0o755);
    chownSync(src, nobody!.uid, nobody!.gid);
    chownSync(ro(src), nobody!.uid, nobody!.gid);
    for (const name of readdirSync(ro(src))) chownSync(join(ro(src), name), nobody!.uid, nobody!.gid);
    chownSync(join(src, 'top.txt'), nobody!.uid, nobody!.gid);
    chmodSync(ro(src), 0o555);
    as(['push', '--dir', src, '--workspace', 'w']);
    as(['pull', '--dir', dest, '--workspace', 'w']);
    expect(statSync(ro(dest)).mode & 0o777).toBe(0o555);

    chmodSync(ro(src), 0o755);
    writeFileSync(join(ro(src), 'r.txt'), 'two');
    writeFileSync(join(ro(src), 'new.txt'), 'new');
    chownSync(join(ro(src), 'new.txt'), nobody!.uid, nobody!.gid);
    rmSync(join(ro(src), 'gone.txt'));
    chmodSync(ro(src), 0o555);
    as(['push', '--dir', src, '--workspace', 'w']);
    as(['pull', '--dir', dest, '--workspace', 'w', '--force']);
    expect(readTree(dest)).toEqual({ 'ro/r.txt': 'two', 'ro/new.txt': 'new', 'top.txt': 't' });
    expect(statSync(ro(dest)).mode & 0o777).toBe(0o555);
  });
});

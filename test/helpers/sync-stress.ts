// The two stress scenarios of issue 36, shared by their tests (test/sync-torn.test.ts,
// test/sync-prune-race.test.ts, a few runs each) and by bench/sync-stress.mjs (100 pushes, 50
// races): a writer, a real child process, rewriting a folder's files while pushes run; and a prune
// on one machine started when the push of another lands its first object.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../src/config/schema.js';
import { syncPull, syncPush } from '../../src/sync/operations.js';
import type { SyncTarget } from '../../src/sync/stores/target.js';
import { syncPrune } from '../../src/sync/versions/prune.js';
import { depsFor, writeTree } from './sync-fixtures.js';

// Rewrites f0..f{n-1} in a loop, each a truncate and then a write of a new size; says "ready"
// once every file was rewritten at least once.
const WRITER = `
const { writeFileSync } = require('node:fs');
const [dir, n] = [process.argv[1], Number(process.argv[2])];
for (let round = 0; ; round++) {
  for (let i = 0; i < n; i++) writeFileSync(dir + '/f' + i, Buffer.alloc(1 + ((round * 7919 + i * 104729) % 20000), 97 + ((round + i) % 26)));
  if (round === 0) process.stdout.write('ready\\n');
}`;

/** A writer rewriting `n` files of `dir` (f0…) until killed; resolves once each was rewritten. */
export function startWriter(dir: string, n: number): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, ['-e', WRITER, dir, String(n)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`writer exited ${code}`)));
  });
  return { child, ready };
}

/** Every entry of a folder store's manifest whose size is not the length of its stored bytes, or whose hashes are not theirs. */
export function tornEntries(store: string, tree: string, version: string): string[] {
  const state = JSON.parse(readFileSync(join(store, tree, version, '.sandbox-state'), 'utf8')) as {
    files: { path: string; size: number; checksum: string; sha256?: string; pack?: string; offset?: number }[];
  };
  const blob = (sha: string) => readFileSync(join(store, tree, '.blobs', sha.slice(0, 2), sha));
  const torn: string[] = [];
  for (const f of state.files) {
    const bytes = f.pack !== undefined ? blob(f.pack).subarray(f.offset!, f.offset! + f.size) : blob(f.sha256!);
    const md5 = createHash('md5').update(bytes).digest('hex');
    const sha = createHash('sha256').update(bytes).digest('hex');
    if (bytes.length !== f.size || md5 !== f.checksum || sha !== f.sha256)
      torn.push(`${version} ${f.path}: size ${f.size}, stored ${bytes.length}`);
  }
  return torn;
}

export const RACE_T = 1_700_000_000;
export const RACE_BIG = Buffer.alloc(3 * 1024 * 1024, 'b');

/**
 * Two machines (two folders, two homes under `base`) on the store `config` names: machine 2's push
 * reuses a 3 MB content the store still holds but that only an old version references (a copy of
 * a file machine 1 deleted since); machine 1's `prune --keep 1` starts once the push's first new
 * object is in the store, and the push publishes only once the prune has ended. Every blob counts
 * as old to the prune (its store clock two hours ahead), as it would an hour after it was sent.
 * `at` offsets every version name (a run of races on one store).
 */
export async function pruneDuringPush(config: Config, base: string, at = RACE_T) {
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  const machine =
    (home: string) =>
    (seconds: number, extra: { storeNow?: () => number; beforePublish?: () => Promise<void> } = {}) =>
      depsFor(config, join(base, home), () => seconds * 1000).then((d) => ({ ...d, ...extra }));
  const one = machine('home1');
  const two = machine('home2');
  const a = join(base, 'a');
  const b = join(base, 'b');
  writeTree(a, { big: RACE_BIG, s: 'small' });
  await syncPush(target(a), await one(at));
  writeTree(b, { s: 'small' });
  await syncPull(target(b), await two(at + 1), { force: true });
  // Machine 1 deletes the big file; machine 2 has a copy of it under another name.
  writeTree(a, { s: 'small', t: 'new on one' });
  rmSync(join(a, 'big'));
  await syncPush(target(a), await one(at + 10));
  await syncPull(target(b), await two(at + 11), { force: true });
  writeTree(b, { copy: RACE_BIG, n: 'new on two' });

  const store = (await one(at)).store;
  const before = new Set((await store.listBlobs('ws')).keys());
  let pruned: ReturnType<typeof syncPrune> | undefined;
  let watching = true;
  const old = () => Date.now() + 2 * 3600_000;
  // Watches the store: the prune starts once the push's first new object is there.
  const watch = (async () => {
    while (watching) {
      const now = [...(await store.listBlobs('ws')).keys()];
      if (now.some((k) => !before.has(k))) {
        pruned = one(at + 20, { storeNow: old }).then((deps) => syncPrune(target(a), deps, { keep: 1 }));
        return;
      }
      await new Promise((ok) => setImmediate(ok));
    }
  })();
  const pushed = await syncPush(target(b), await two(at + 30, { beforePublish: async () => void (await watch, await pruned) }));
  watching = false;
  return { pushed, pruned, one, target, a, old };
}

// Sync under stress (issue 36), counted against its targets: torn versions in PUSHES pushes with a
// writer (a child process) rewriting the files throughout, and unreadable versions in RACES
// prune-during-push races (a prune on one machine started when the push of another lands its
// first object), against a folder store, s3rver and moto (when installed). The scenarios are the
// tests' own (test/helpers/sync-stress.ts; the tests run 12 pushes and one race per store), run
// in-process on atlas's sources bundled with esbuild, as the tests run them.
// A version counts as torn when `atlas sync versions` does not call it complete, when a pull of it
// fails, or (folder store) when an entry's size or hashes are not those of its stored bytes; a race
// counts an unreadable version when a version is not complete or the newest one does not pull.
// Usage: node bench/sync-stress.mjs [pushes=100] [races=50]; BENCH_STRESS_STORES=dir,s3rver,moto.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { importBundle, ROOT } from './lib.mjs';

const PUSHES = Number(process.argv[2] ?? 100);
const RACES = Number(process.argv[3] ?? 50);
const STORES = (process.env.BENCH_STRESS_STORES ?? 'dir,s3rver,moto').split(',').map((s) => s.trim());

// The tests' helpers and the sync engine, bundled once (node_modules stay outside).
const outDir = join(ROOT, 'node_modules', '.cache', 'atlas-bench');
mkdirSync(outDir, { recursive: true });
const bundle = join(outDir, 'sync-stress.mjs');
const m = await importBundle(bundle, {
  stdin: {
    contents: [
      "export { syncPull, syncPush, syncVersions } from './src/sync/operations.ts';",
      "export { configWith, depsFor, scratch, removeScratch, writeTree } from './test/helpers/sync-fixtures.ts';",
      "export { startWriter, tornEntries, pruneDuringPush } from './test/helpers/sync-stress.ts';",
      "export { startS3rver, S3RVER_ENV } from './test/helpers/s3rver.ts';",
      "export { startMoto, motoMissing } from './test/helpers/moto.ts';",
    ].join('\n'),
    resolveDir: ROOT,
    loader: 'ts',
  },
  packages: 'external',
  // s3rver.ts finds its child script beside itself.
  define: { 'import.meta.dirname': JSON.stringify(join(ROOT, 'test', 'helpers')) },
  logLevel: 'warning',
});
// The SDK's advice about a manifest sent as a stream (its length is known to atlas), once per push.
const warn = console.warn;
console.warn = (...args) => (/Stream of unknown length/.test(String(args[0])) ? undefined : warn(...args));

const hasMoto = () => spawnSync('python3', ['-c', 'import moto.server, flask']).status === 0;
Object.assign(process.env, m.S3RVER_ENV, {
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  AWS_CONFIG_FILE: '/nonexistent',
});

let prefixes = 0;
/** The config of a fresh tree in `kind`'s store; `server` for S3. */
function configFor(kind, server, base) {
  if (kind === 'dir') return m.configWith({ store: join(base, 'store') });
  return m.configWith({ store: `s3://${server.bucket}/s${++prefixes}`, s3: { endpoint: server.endpoint, force_path_style: true } });
}

/** PUSHES pushes while a writer rewrites 50 files; how many of the versions they made are torn. */
async function tornVersions(kind, server) {
  const base = m.scratch('atlas-stress-torn-');
  const root = join(base, 'ws');
  const files = 50;
  m.writeTree(root, Object.fromEntries(Array.from({ length: files }, (_, i) => [`f${i}`, 'x'.repeat(20_000)])));
  const config = configFor(kind, server, base);
  const target = (at) => ({ root: at, tree: 'ws', workspace: 'ws' });
  let clock = 1_700_000_000;
  const deps = () =>
    m.depsFor(config, join(base, 'home'), () => {
      clock += 10;
      return clock * 1000;
    });
  await m.syncPush(target(root), await deps());
  const { child, ready } = m.startWriter(root, files);
  let failed = 0;
  try {
    await ready;
    for (let i = 0; i < PUSHES; i++) await m.syncPush(target(root), await deps()).catch(() => failed++);
  } finally {
    child.kill('SIGKILL');
  }
  const { versions } = await m.syncVersions(target(root), await deps());
  let torn = 0;
  for (const v of versions) {
    const bad =
      v.status !== 'complete' ||
      (kind === 'dir' && m.tornEntries(join(base, 'store'), 'ws', v.version).length > 0) ||
      (await m.syncPull(target(join(base, `pull-${v.version}`)), await deps(), { version: v.version }).then(
        () => false,
        () => true,
      ));
    if (bad) torn++;
  }
  m.removeScratch();
  return { versions: versions.length, torn, failed };
}

/** RACES prune-during-push races; how many left a version unreadable, and how many prunes ran during the push. */
async function unreadableVersions(kind, server) {
  let unreadable = 0;
  let raced = 0;
  for (let i = 0; i < RACES; i++) {
    const base = m.scratch('atlas-stress-race-');
    const { one, target, a, pruned } = await m.pruneDuringPush(configFor(kind, server, base), base);
    if (pruned) {
      raced++;
      await pruned;
    }
    const { versions } = await m.syncVersions(target(a), await one(1_700_000_040));
    unreadable += versions.filter((v) => v.status !== 'complete').length;
    const pulled = await m.syncPull(target(join(base, 'fresh')), await one(1_700_000_041), {}).then(
      () => true,
      () => false,
    );
    if (!pulled) unreadable++;
    m.removeScratch();
  }
  return { unreadable, raced };
}

console.log(
  `${PUSHES} pushes with a writer rewriting 50 files of up to 20 KB; ${RACES} prune-during-push races; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
let missed = 0;
for (const kind of STORES) {
  if (kind === 'moto' && !hasMoto()) {
    console.log("moto: not installed, skipped (pip install 'moto[server]')");
    continue;
  }
  const server = kind === 's3rver' ? await m.startS3rver('atlas-stress') : kind === 'moto' ? await m.startMoto('atlas-stress') : undefined;
  try {
    const t0 = Date.now();
    const torn = await tornVersions(kind, server);
    const t1 = Date.now();
    const races = await unreadableVersions(kind, server);
    const t2 = Date.now();
    const ok = (n) => (n === 0 ? 'ok' : 'MISSED');
    if (torn.torn > 0 || races.unreadable > 0 || races.raced < RACES) missed++;
    console.log(
      `${kind}: ${torn.torn} torn of ${torn.versions} versions from ${PUSHES} pushes (${torn.failed} refused), target 0: ${ok(torn.torn)} (${((t1 - t0) / 1000).toFixed(0)} s); ` +
        `${races.unreadable} unreadable versions in ${RACES} races (${races.raced} with the prune running during the push), target 0: ${ok(races.unreadable)} (${((t2 - t1) / 1000).toFixed(0)} s)`,
    );
  } finally {
    await server?.stop();
  }
}
process.exit(missed > 0 ? 1 : 0);

// Fixtures for the sync tests: folders of files, their listing, and deps pointing at a store.
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { openStore } from '../../src/sync/stores/open-store.js';
import type { SyncStore } from '../../src/sync/stores/store.js';
import type { SyncDeps, SyncTarget } from '../../src/sync/stores/target.js';

export function tempDir(prefix = 'atlas-sync-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

const made: string[] = [];

/** A temp folder removed by removeScratch() (call it in afterAll). */
export function scratch(prefix?: string): string {
  const d = tempDir(prefix);
  made.push(d);
  return d;
}

export function removeScratch(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

export function writeTree(root: string, files: Record<string, string | Buffer>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** Every file under root (symlinks as "-> size"), minus atlas's own state, lock and temp folder at the root. */
export function readTree(root: string, options: { all?: boolean } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (!options.all && rel === '' && /^\.sandbox-state(\.lock|\.tmp)?$/.test(d.name)) continue;
      if (d.isSymbolicLink()) out[path] = `-> ${lstatSync(join(dir, d.name)).size}`;
      else if (d.isDirectory()) walk(join(dir, d.name), path);
      else out[path] = readFileSync(join(dir, d.name), 'utf8');
    }
  };
  walk(root, '');
  return out;
}

export function configWith(sync: Partial<Omit<Config['sync'], 's3'>> & { s3?: Partial<Config['sync']['s3']> } = {}): Config {
  const config = defaultConfig();
  const { s3, ...rest } = sync;
  config.sync = { ...config.sync, ...rest, s3: { ...config.sync.s3, ...s3 } };
  return config;
}

export interface TestDeps extends SyncDeps {
  warnings: string[];
}

export async function depsFor(config: Config, home: string, now?: () => number): Promise<TestDeps> {
  const warnings: string[] = [];
  return { store: await openStore(config, home), config, warn: (t) => warnings.push(t), warnings, ...(now ? { now } : {}) };
}

/** Every blob file of a tree in a folder store (contents of their own and packs), as paths. */
export function blobFiles(store: string, tree: string): string[] {
  const area = join(store, tree, '.blobs');
  if (!existsSync(area)) return [];
  return readdirSync(area)
    .filter((fan) => /^[0-9a-f]{2}$/.test(fan))
    .flatMap((fan) => readdirSync(join(area, fan)).map((name) => join(area, fan, name)))
    .sort();
}

/** A version of a folder store as {path: content}: its manifest read, each file from its blob (or, in the old layout, from the version). */
export function readStoredVersion(store: string, tree: string, version: string): Record<string, string> {
  const state = JSON.parse(readFileSync(join(store, tree, version, '.sandbox-state'), 'utf8')) as {
    files: { path: string; size: number; sha256?: string; link?: string; pack?: string; offset?: number }[];
  };
  const blob = (sha: string) => readFileSync(join(store, tree, '.blobs', sha.slice(0, 2), sha));
  const content = (f: (typeof state.files)[number]) => {
    if (f.link !== undefined) return `-> ${f.link}`;
    // A pack that pruning took apart: the content is a blob of its own.
    if (f.pack !== undefined && existsSync(join(store, tree, '.blobs', f.pack.slice(0, 2), f.pack)))
      return blob(f.pack)
        .subarray(f.offset!, f.offset! + f.size)
        .toString('utf8');
    return (f.sha256 ? blob(f.sha256) : readFileSync(join(store, tree, version, f.path))).toString('utf8');
  };
  return Object.fromEntries(state.files.map((f) => [f.path, content(f)]));
}

/** The real store with one or more of its methods replaced (a kill or a fault at a chosen step). */
export function storeWith(store: SyncStore, replace: Partial<SyncStore>): SyncStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key in replace) return replace[key as keyof SyncStore];
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The store, with `change` run once at its first findBlobs: after a push's scan, before it reads a file. */
export function changingAfterScan(store: SyncStore, change: () => void): SyncStore {
  let changed = false;
  return storeWith(store, {
    findBlobs: async (tree, wanted) => {
      if (!changed) change();
      changed = true;
      return store.findBlobs(tree, wanted);
    },
  });
}

/**
 * A folder store `store` in a fresh scratch folder `base`, a target (tree and workspace `ws`) per
 * folder, and deps whose clock moves `step` seconds at each call (7200: every pull incremental).
 */
export function folderStoreWorld(prefix: string, step = 10) {
  const base = scratch(prefix);
  const store = join(base, 'store');
  const config = configWith({ store });
  const target = (root: string): SyncTarget => ({ root, tree: 'ws', workspace: 'ws' });
  let clock = 1_700_000_000;
  const deps = () => depsFor(config, join(base, 'home'), () => (clock += step) * 1000);
  return { base, store, target, deps };
}

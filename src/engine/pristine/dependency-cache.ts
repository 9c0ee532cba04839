// A pristine tree's dependency folders (node_modules, .venv, ...), from where no step could have
// written them. With validation.setup they are built by those commands in a pristine tree and kept
// under $ATLAS_HOME/cache/validation/<key>, the key naming the setup, the folders and the tree's
// lockfiles: the next validation of a tree with the same lockfiles links them instead of building.
// A setup reads more than the key covers (`npm ci` runs the package's `prepare` script), so an entry
// is only ever built in a checkout of the task's base commit, which no step wrote; a tree whose
// setup inputs differ from its base builds its own, uncached. A sandboxed step cannot write
// $ATLAS_HOME, so it cannot touch the cache. Without a setup, a task in its own worktree links the
// main checkout's folders (which its sandbox cannot write either).
import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';

/** Files whose content decides what a setup builds (read from the pristine tree's root). */
export const DEPENDENCY_INPUTS = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lockb',
  '.npmrc',
  'requirements.txt',
  'requirements-dev.txt',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'Cargo.lock',
  'go.sum',
  'Gemfile.lock',
  'composer.lock',
];

/** Cache entries kept (the most recently used); older ones are removed after a new one is made. */
export const CACHE_ENTRIES_KEPT = 5;
const COMPLETE = '.atlas-complete.json';

export function cacheRoot(home: string): string {
  return join(home, 'cache', 'validation');
}

/** validation.dependencies entries are folder names relative to the tree, never outside it. */
export function checkDependencyFolders(folders: readonly string[]): string[] {
  return folders.map((f) => {
    const n = normalize(f);
    if (!f || isAbsolute(f) || n === '.' || n.startsWith('..') || n.split(sep).includes('..') || f.includes('\0')) {
      throw new AtlasError(`validation.dependencies: ${JSON.stringify(f)} is not a folder inside the repository`, {
        exitCode: EXIT.input,
        hint: 'list folder names relative to the repository root, e.g. ["node_modules", ".venv"]',
      });
    }
    return n.replace(/\/+$/, '');
  });
}

/** The cache key: what the setup is, which folders it makes, and the tree's lockfiles. */
export function dependencyKey(tree: string, setup: readonly string[], folders: readonly string[]): string {
  const inputs: [string, string][] = [];
  for (const name of DEPENDENCY_INPUTS) {
    const path = join(tree, name);
    let st: import('node:fs').Stats;
    try {
      st = lstatSync(path);
    } catch {
      continue;
    }
    const content = st.isSymbolicLink() ? `link:${readlinkSync(path)}` : st.isFile() ? readFileSync(path) : 'not a file';
    inputs.push([name, createHash('sha256').update(content).digest('hex')]);
  }
  const described = JSON.stringify({ v: 1, platform: process.platform, arch: process.arch, setup, folders, inputs });
  return createHash('sha256').update(described).digest('hex');
}

function isRealDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Points tree/<folder> at source (replacing what the tree's own files had there). */
function link(tree: string, folder: string, source: string): void {
  const target = join(tree, folder);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(join(target, '..'), { recursive: true });
  symlinkSync(source, target);
}

export interface CachedDependencies {
  /** The receipt's `dependencies`: setup:<key> (from the cache), uncached:<key> (built in the tree). */
  source: string;
  /** Built now (false: linked from the cache). */
  built: boolean;
}

/**
 * Links the setup's folders into `tree` from the cache. On a miss `build` runs the setup in a tree
 * no step wrote (the task's base commit, whose setup inputs are the tree's) and returns that
 * folder: its dependency folders are what the cache keeps. `build` throws when a command fails:
 * nothing is cached then.
 */
export async function cachedDependencies(
  home: string,
  tree: string,
  setup: readonly string[],
  folders: readonly string[],
  build: () => Promise<string>,
): Promise<CachedDependencies> {
  const key = dependencyKey(tree, setup, folders);
  const root = cacheRoot(home);
  const entry = join(root, key);
  let built = false;
  if (!existsSync(join(entry, COMPLETE))) {
    const source = await build();
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const staging = join(root, `.tmp-${key.slice(0, 16)}-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(staging, { mode: 0o700 });
    try {
      for (const folder of folders) {
        const made = join(source, folder);
        if (!isRealDir(made)) continue;
        mkdirSync(join(staging, folder, '..'), { recursive: true });
        moveDir(made, join(staging, folder));
      }
      writeFileSync(join(staging, COMPLETE), `${JSON.stringify({ setup, folders, created_at: new Date().toISOString() })}\n`);
      try {
        renameSync(staging, entry);
      } catch {
        // Another run made the same entry meanwhile: theirs is as good as ours.
        if (!existsSync(join(entry, COMPLETE)))
          throw new AtlasError(`could not store the dependency cache entry ${entry}`, { exitCode: EXIT.failure });
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    built = true;
    pruneCache(root);
  }
  for (const folder of folders) if (isRealDir(join(entry, folder))) link(tree, folder, join(entry, folder));
  const now = new Date();
  utimesSync(entry, now, now);
  return { source: `setup:${key}`, built };
}

/**
 * A tree whose setup inputs are not its base commit's (or a task with no base): the setup runs in
 * the tree itself, and what it makes stays there. A step wrote those inputs: nothing is cached.
 */
export async function uncachedDependencies(
  tree: string,
  setup: readonly string[],
  folders: readonly string[],
  run: () => Promise<void>,
): Promise<CachedDependencies> {
  const key = dependencyKey(tree, setup, folders);
  await run();
  return { source: `uncached:${key}`, built: true };
}

function moveDir(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    rmSync(from, { recursive: true, force: true });
  }
}

/** Keeps the CACHE_ENTRIES_KEPT most recently used entries, and no staging folder of a killed run. */
function pruneCache(root: string): void {
  for (const n of readdirSync(root)) {
    if (n.startsWith('.tmp-') && Date.now() - statSync(join(root, n)).mtimeMs > 3_600_000)
      rmSync(join(root, n), { recursive: true, force: true });
  }
  const entries = readdirSync(root)
    .filter((n) => /^[0-9a-f]{64}$/.test(n))
    .map((n) => ({ path: join(root, n), at: statSync(join(root, n)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const old of entries.slice(CACHE_ENTRIES_KEPT)) rmSync(old.path, { recursive: true, force: true });
}

/**
 * Without a setup: a task in a worktree of its own links the main checkout's folders (`repository`);
 * a task in the checkout itself has none it could trust (`none`).
 */
export function repositoryDependencies(tree: string, repoRoot: string, inPlace: boolean, folders: readonly string[]): string {
  if (inPlace) return 'none';
  let linked = 0;
  for (const folder of folders) {
    const source = join(repoRoot, folder);
    if (!isRealDir(source)) continue;
    link(tree, folder, source);
    linked++;
  }
  return linked > 0 ? 'repository' : 'none';
}

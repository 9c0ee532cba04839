// `atlas sync export [--version TS] DEST`: a stored version written out as an ordinary folder,
// for tools that want plain files: no `.sandbox-state`, no lock, nothing of atlas's left in it.
// DEST must be new or empty, so an export never mixes with or overwrites anything.
import { existsSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import { linkStaysInside } from '../domain/sync-state.js';
import { writeEntries } from './materialize.js';
import { silentProgress } from './progress.js';
import type { SyncDeps, SyncTarget } from './target.js';
import { latestVersion, namedVersion } from './versions.js';

export interface ExportResult {
  location: string;
  workspace: string;
  version: string;
  dest: string;
  files: number;
  links: number;
  bytes: number;
  /** Links of the version pointing outside the folder: not written. */
  skipped_links: string[];
  duration_ms: number;
}

function requireEmpty(dest: string): void {
  if (!existsSync(dest)) {
    mkdirSync(dest, { recursive: true });
    return;
  }
  const st = lstatSync(dest);
  if (!st.isDirectory() || readdirSync(dest).length > 0) {
    throw new AtlasError(`${dest} ${st.isDirectory() ? 'is not empty' : 'is not a folder'}: an export writes into a new or empty folder only`, { exitCode: EXIT.input, hint: 'name a folder that does not exist yet' });
  }
}

export async function syncExport(target: Pick<SyncTarget, 'tree' | 'workspace'>, deps: SyncDeps, options: { version?: string; dest: string }): Promise<ExportResult> {
  const { store, warn } = deps;
  const started = Date.now();
  await store.checkAccess();
  const stored = options.version !== undefined ? await namedVersion(store, target.tree, options.version) : await latestVersion(store, target.tree, await store.listVersionNames(target.tree), warn, true);
  if (!stored) throw new AtlasError(`${store.location} has no version of ${target.tree}`, { exitCode: EXIT.notFound, hint: 'run `atlas sync versions` to list the stored versions' });
  requireEmpty(options.dest);
  const outside = stored.state.files.filter((f) => f.link !== undefined && !linkStaysInside(f.path, f.link));
  const entries = stored.state.files.filter((f) => !outside.includes(f));
  const where = `version ${stored.version} of ${target.tree} (${store.location})`;
  const bytes = await writeEntries(options.dest, { store, tree: target.tree, version: stored.version, where }, entries, stored.state.dirs, deps.progress ?? silentProgress);
  return {
    location: store.location,
    workspace: target.workspace,
    version: stored.version,
    dest: options.dest,
    files: entries.filter((f) => f.link === undefined).length,
    links: entries.filter((f) => f.link !== undefined).length,
    bytes,
    skipped_links: outside.map((f) => f.path),
    duration_ms: Date.now() - started,
  };
}

// `atlas sync export [--version TS] DEST`: a stored version written out as an ordinary folder,
// or as plain objects under an S3 prefix (export-s3.ts), for tools that want plain files: no
// `.sandbox-state`, no lock, nothing of atlas's left in it. A folder keeps what a pull keeps (file
// and folder modes and times, links inside, hard links); S3 keeps contents only. DEST must be new or empty, so an
// export never mixes with or overwrites anything.
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { FileEntry } from '../../domain/sync-state.js';
import { splitOutsideLinks } from '../../domain/sync-state.js';
import { mkdirForPerson } from '../../store/private-umask.js';
import { silentProgress } from '../report/progress.js';
import type { SyncDeps, SyncTarget } from '../stores/target.js';
import { resolveVersion } from '../versions/versions.js';
import { relinkGroups } from './hardlinks.js';
import { writeEntries } from './materialize.js';
import { setFolderModes, setFolderTimes } from './open-folders.js';
import { staged } from './staging.js';

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
    mkdirForPerson(dest);
    return;
  }
  const st = lstatSync(dest);
  if (!st.isDirectory() || readdirSync(dest).length > 0) {
    throw new AtlasError(
      `${dest} ${st.isDirectory() ? 'is not empty' : 'is not a folder'}: an export writes into a new or empty folder only`,
      { exitCode: EXIT.input, hint: 'name a folder that does not exist yet' },
    );
  }
}

export async function syncExport(
  target: Pick<SyncTarget, 'tree' | 'workspace'>,
  deps: SyncDeps,
  options: { version?: string; dest: string },
): Promise<ExportResult> {
  const { store, warn } = deps;
  const started = Date.now();
  await store.checkAccess({ reading: true });
  const stored = await resolveVersion(store, target.tree, options.version, warn);
  if (!stored)
    throw new AtlasError(`${store.location} has no version of ${target.tree}`, {
      exitCode: EXIT.notFound,
      hint: 'run `atlas sync versions` to list the stored versions',
    });
  const source = {
    store,
    tree: target.tree,
    version: stored.version,
    where: `version ${stored.version} of ${target.tree} (${store.location})`,
  };
  const progress = deps.progress ?? silentProgress;
  const result = (entries: FileEntry[], links: number, skipped: FileEntry[], bytes: number): ExportResult => ({
    location: store.location,
    workspace: target.workspace,
    version: stored.version,
    dest: options.dest,
    files: entries.filter((f) => f.link === undefined).length,
    links,
    bytes,
    skipped_links: skipped.map((f) => f.path),
    duration_ms: Date.now() - started,
  });

  if (options.dest.startsWith('s3://')) {
    // Written to a private staging folder first (each file checked against the version as a pull
    // checks it), then uploaded; S3 holds no links, so none is written.
    const { S3ExportDestination } = await import('./export-s3.js');
    const dest = S3ExportDestination.open(options.dest, deps.config);
    try {
      await dest.requireEmpty();
      const files = stored.state.files.filter((f) => f.link === undefined);
      const staging = mkdtempSync(join(tmpdir(), 'atlas-export-'));
      try {
        const bytes = await staged(staging, files, (stage) => writeEntries(staging, source, files, [], progress, stage));
        await dest.upload(staging, files);
        return result(
          files,
          0,
          stored.state.files.filter((f) => f.link !== undefined),
          bytes,
        );
      } finally {
        rmSync(staging, { recursive: true, force: true });
      }
    } finally {
      dest.close();
    }
  }

  requireEmpty(options.dest);
  const { kept: entries, outside } = splitOutsideLinks(stored.state.files);
  const bytes = await staged(options.dest, entries, (stage) =>
    writeEntries(options.dest, source, entries, stored.state.dirs, progress, stage),
  );
  // As a pull does (rsync -a): names of one file linked again, then folder modes, then folder times.
  await relinkGroups(options.dest, stored.state);
  setFolderModes(options.dest, stored.state.dir_modes ?? {});
  setFolderTimes(options.dest, stored.state.dir_times ?? {});
  return result(entries, entries.filter((f) => f.link !== undefined).length, outside, bytes);
}

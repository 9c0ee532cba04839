// `atlas sync push`: the folder becomes a new stored version, sending only what the newest stored
// version lacks (unchanged files are reused by server-side copy or hard link, renamed ones too);
// when nothing changed, no version is made (seed 000 §3.2, seed 001 §5.2-5.3).
import { join } from 'node:path';
import type { SyncStats } from '../domain/sync-plan.js';
import { emptyStats, nextVersionName, planPush } from '../domain/sync-plan.js';
import type { ExcludeRule, FileEntry, StateFile } from '../domain/sync-state.js';
import { serializeState, STATE_FORMAT_VERSION, unsafeEntries } from '../domain/sync-state.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { readLocalState, withWorkspaceLock, writeLocalState } from './local-state.js';
import { mapPool } from './pool.js';
import { silentProgress } from './progress.js';
import { scanWorkspace } from './scan.js';
import type { SyncDeps } from './target.js';
import { requireFolder } from './target.js';
import { latestVersion } from './versions.js';

export interface PushTreeOptions {
  root: string;
  tree: string;
  rules: readonly ExcludeRule[];
}

/** Pushes one folder as one tree; the caller has checked access to the store. */
export async function pushTree(options: PushTreeOptions, deps: SyncDeps): Promise<SyncStats> {
  const { root, tree } = options;
  const { store, warn } = deps;
  const progress = deps.progress ?? silentProgress;
  const now = deps.now ?? Date.now;
  const started = now();
  requireFolder(root);
  return withWorkspaceLock(root, async () => {
    const stats = emptyStats('push');
    const previous = readLocalState(root, warn);
    const scan = await scanWorkspace(root, options.rules, previous);
    refuseUnpullable(root, scan.files);
    if (scan.symlinks.length > 0) stats.notes.push(`${scan.symlinks.length} symlink(s) not synced (what they point to is not part of the workspace): ${scan.symlinks.slice(0, 5).join(', ')}${scan.symlinks.length > 5 ? ', ...' : ''}`);
    const names = await store.listVersionNames(tree);
    const latest = await latestVersion(store, tree, names, warn);
    noteUnpulledChanges(latest?.state, previous, scan.files, latest?.version, stats);
    const plan = planPush(scan.files, latest?.state.files);
    // The sync's time is when its scan began, not when it ended: a file written while the push ran
    // has an mtime at or after it, so the next scan hashes it again instead of trusting the old MD5.
    const finish = (files: FileEntry[]): StateFile => ({ version: STATE_FORMAT_VERSION, last_synced_at: Math.floor(started / 1000), files });
    if (plan.unchanged || (latest === undefined && scan.files.length === 0)) {
      stats.files_skipped = scan.files.length;
      stats.notes.push(latest ? `nothing changed since version ${latest.version}: no new version` : 'the folder is empty: nothing to push');
      writeLocalState(root, finish(scan.files));
      stats.duration_ms = now() - started;
      return stats;
    }
    const version = nextVersionName(Math.floor(now() / 1000), names);
    const writer = await store.beginVersion(tree, version);
    const files = new Map(scan.files.map((f) => [f.path, f]));
    try {
      const upload = [...plan.upload];
      await mapPool(plan.reuse, store.kind === 's3' ? 32 : 8, async ({ entry, from }) => {
        if (await writer.reuse(latest!.version, from, entry.path)) stats.files_reused++;
        else upload.push(entry); // the stored copy vanished: send it
      });
      progress.start(`push ${tree}`, upload.length, upload.reduce((n, f) => n + f.size, 0));
      await mapPool(upload, 8, async (entry) => {
        const sent = await writer.upload(entry.path, join(root, ...entry.path.split('/')));
        // The state records what was stored: a file that changed since the scan is stored as sent
        // (its newer mtime makes the next scan hash it again).
        if (sent.md5 !== entry.checksum || sent.bytes !== entry.size) files.set(entry.path, { ...entry, checksum: sent.md5, size: sent.bytes });
        stats.bytes_transferred += sent.bytes;
        progress.advance(sent.bytes);
      });
      stats.files_uploaded = upload.length;
      const state = finish([...files.values()]);
      await writer.commit(serializeState(state));
      writeLocalState(root, state);
    } catch (error) {
      await writer.abort();
      throw error;
    } finally {
      progress.finish();
    }
    stats.version = version;
    stats.duration_ms = now() - started;
    return stats;
  });
}

/**
 * A name that a pull would refuse (a backslash, which a pull on another system would read as a
 * folder separator, or a control character) is refused here, naming the file: stored, it would make
 * the version damaged and every later pull and cold start of the workspace fail.
 */
function refuseUnpullable(root: string, files: readonly FileEntry[]): void {
  const refused = unsafeEntries(files);
  if (refused.length === 0) return;
  const list = refused.slice(0, 10).map((r) => `  ${JSON.stringify(r.path)} ${r.problem}`).join('\n');
  throw new AtlasError(`${root}: ${refused.length} file name${refused.length === 1 ? '' : 's'} cannot be stored (a pull would refuse ${refused.length === 1 ? 'it' : 'them'}), so nothing was pushed:\n${list}${refused.length > 10 ? `\n  ... and ${refused.length - 10} more` : ''}`, {
    exitCode: EXIT.input,
    hint: 'rename those files, or leave them out with sync.exclude',
  });
}

/** A push never merges: say so when the store's newest version has changes this folder never saw. */
function noteUnpulledChanges(latest: StateFile | undefined, previous: StateFile | undefined, local: readonly FileEntry[], version: string | undefined, stats: SyncStats): void {
  if (!latest || !previous) return;
  const known = new Set(previous.files.map((f) => `${f.path}\0${f.checksum}`));
  const here = new Set(local.map((f) => `${f.path}\0${f.checksum}`));
  const unseen = latest.files.filter((f) => !known.has(`${f.path}\0${f.checksum}`) && !here.has(`${f.path}\0${f.checksum}`));
  if (unseen.length > 0) {
    stats.notes.push(`version ${version} had ${unseen.length} change(s) this folder never pulled (e.g. ${unseen[0]!.path}); they stay in that version (atlas sync pull --version ${version})`);
  }
}

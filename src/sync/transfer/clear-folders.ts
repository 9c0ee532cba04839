// A folder where the version has a file (the folder was replaced by a file on the other machine):
// with --force it gives way when everything in it is a file this pull deletes anyway (tracked by
// the last sync and unchanged since), so nothing the person made is lost.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PullPlan } from '../../domain/sync-plan.js';
import type { Refusal } from '../../domain/sync-state.js';

/**
 * The folders of `plan.folders` that hold only files of `deletions` (and the folders on their
 * way), and the refusals left once those are taken out. Read with lstat: a link inside is not a
 * file the pull deletes unless the last sync tracked it, and is never followed.
 */
export function clearableFolders(
  root: string,
  plan: Pick<PullPlan, 'folders' | 'refused'>,
  deletions: readonly string[],
): { folders: string[]; refused: Refusal[] } {
  const deleting = new Set(deletions);
  const folders = plan.folders.filter((folder) => onlyDeleted(root, folder, deleting));
  const cleared = new Set(folders);
  return { folders, refused: plan.refused.filter((r) => !cleared.has(r.path)) };
}

/** True when every entry under `folder` is a file being deleted or a folder holding such files. */
function onlyDeleted(root: string, folder: string, deleting: ReadonlySet<string>): boolean {
  const names = readdirSync(join(root, folder));
  // An empty folder would stay after the deletions (they remove only the folders they empty).
  if (names.length === 0) return false;
  return names.every((name) => {
    const rel = `${folder}/${name}`;
    return lstatSync(join(root, rel)).isDirectory() ? onlyDeleted(root, rel, deleting) : deleting.has(rel);
  });
}

/** The deletions inside the cleared folders (made before the downloads), then the rest. */
export function splitDeletions(deletions: readonly string[], folders: readonly string[]): { first: string[]; rest: string[] } {
  const inside = (path: string) => folders.some((f) => path.startsWith(`${f}/`));
  return { first: deletions.filter(inside), rest: deletions.filter((p) => !inside(p)) };
}

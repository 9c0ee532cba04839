// Folders a pull writes inside that their owner may not write (a 0555 folder an earlier pull
// restored): opened for the pull (u+w), then given back their bits, as rsync does. Never through
// a link: each step of a path must be a real folder.
import type { Stats } from 'node:fs';
import { chmodSync, lstatSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A real folder at `path` inside `root`, every step of the way (a link planted in it is never followed). */
export function realFolder(root: string, path: string): Stats | undefined {
  const parts = path.split('/');
  let st: Stats | undefined;
  for (let i = 1; i <= parts.length && (i === 1 || st?.isDirectory()); i++)
    st = lstatSync(join(root, ...parts.slice(0, i)), { throwIfNoEntry: false });
  return st?.isDirectory() ? st : undefined;
}

/** Makes writable the folders holding `paths` that are not; their bits before, by folder. */
export function openFolders(root: string, paths: Iterable<string>): Map<string, number> {
  const opened = new Map<string, number>();
  const seen = new Set<string>();
  for (const path of paths) {
    for (let d = dirname(path); d !== '.' && d !== '' && !seen.has(d); d = dirname(d)) {
      seen.add(d);
      const st = realFolder(root, d);
      if (st && (st.mode & 0o200) === 0) {
        opened.set(d, st.mode & 0o777);
        chmodSync(join(root, d), (st.mode & 0o777) | 0o700);
      }
    }
  }
  return opened;
}

/**
 * Folders get `modes` once everything inside is written (a 0500 folder would refuse its files),
 * deepest first; a path that is not a real folder here (a link, a file) is left alone.
 */
export function setFolderModes(root: string, modes: Readonly<Record<string, number>>): void {
  for (const path of Object.keys(modes).sort((a, b) => b.length - a.length)) {
    const st = realFolder(root, path);
    if (st && (st.mode & 0o777) !== modes[path]) chmodSync(join(root, path), modes[path]!);
  }
}

/**
 * Folders get their stored modification times last, once nothing more is written inside (a write
 * would move them), deepest first; a path that is not a real folder here is left alone.
 */
export function setFolderTimes(root: string, times: Readonly<Record<string, number>>): void {
  for (const path of Object.keys(times).sort((a, b) => b.length - a.length)) {
    const st = realFolder(root, path);
    if (st && Math.floor(st.mtimeMs / 1000) !== times[path]) utimesSync(join(root, path), times[path]!, times[path]!);
  }
}

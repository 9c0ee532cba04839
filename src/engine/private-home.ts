// ATLAS_HOME is private (validation output, prompts and agent transcripts can hold secrets):
// atlas creates its folders 0700 and its files 0600. `atlas init` brings a home made by an
// older atlas (or by hand) to the same state, and says what it changed.
import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface TightenResult {
  /** Paths whose group or other permissions were removed. */
  changed: string[];
  /** Paths that could not be changed (not ours, vanished), with the reason. */
  failed: { path: string; error: string }[];
}

/**
 * Removes group and other permissions from ATLAS_HOME and everything atlas keeps in it. A task's
 * worktree holds the repository's own files: only its folder is tightened (that alone closes it
 * to others), its contents keep their modes. Symbolic links are never followed.
 */
export function tightenHome(home: string): TightenResult {
  const result: TightenResult = { changed: [], failed: [] };
  const visit = (path: string, descend: (name: string, depth: number) => boolean, depth: number) => {
    let st: import('node:fs').Stats;
    try {
      st = lstatSync(path);
    } catch (error) {
      result.failed.push({ path, error: (error as NodeJS.ErrnoException).code ?? String(error) });
      return;
    }
    if (st.isSymbolicLink()) return;
    if ((st.mode & 0o077) !== 0) {
      try {
        chmodSync(path, st.mode & 0o700);
        result.changed.push(path);
      } catch (error) {
        result.failed.push({ path, error: (error as NodeJS.ErrnoException).code ?? String(error) });
      }
    }
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) {
      if (descend(name, depth)) visit(join(path, name), descend, depth + 1);
      else tightenOnly(join(path, name), result);
    }
  };
  // Depth 2 under home is workspaces/<name>/…: its `worktree` is the repository's checkout.
  visit(home, (name, depth) => !(depth === 2 && name === 'worktree'), 0);
  return result;
}

function tightenOnly(path: string, result: TightenResult): void {
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink() || (st.mode & 0o077) === 0) return;
    chmodSync(path, st.mode & 0o700);
    result.changed.push(path);
  } catch (error) {
    result.failed.push({ path, error: (error as NodeJS.ErrnoException).code ?? String(error) });
  }
}

// A bundle committed with a change cannot be part of the commit its receipts were made on: the
// commit that adds it comes after. So `--commit SHA` also accepts receipts made on a commit whose
// tree differs from SHA's only in the bundle files being verified — the validated code is SHA's.
import { relative, sep } from 'node:path';
import { runGit } from '../git/run-git.js';

const MAX_CANDIDATES = 20;

/** Repository-relative paths (with /) of `files` inside the git work tree around `cwd`. */
async function repoPaths(cwd: string, files: string[]): Promise<string[]> {
  const top = await runGit(cwd, ['rev-parse', '--show-toplevel'], { allowFailure: true }).catch(() => undefined);
  if (top?.code !== 0) return [];
  const root = top.stdout.trim();
  return files
    .map((f) => relative(root, f))
    .filter((rel) => rel.length > 0 && !rel.startsWith(`..${sep}`) && rel !== '..')
    .map((rel) => rel.split(sep).join('/'));
}

/**
 * Which of `candidates` (commits receipts were made on) have SHA's tree except for `bundleFiles`.
 * A candidate git does not know (a shallow clone) is left out: `why` says so.
 */
export async function equivalentCommits(
  commit: string,
  candidates: string[],
  bundleFiles: string[],
  cwd: string,
): Promise<{ equivalent: Map<string, string[]>; unknown: string[] }> {
  const equivalent = new Map<string, string[]>();
  const unknown: string[] = [];
  const allowed = new Set(await repoPaths(cwd, bundleFiles));
  if (allowed.size === 0) return { equivalent, unknown };
  for (const candidate of candidates.filter((c) => c !== commit).slice(0, MAX_CANDIDATES)) {
    const diff = await runGit(cwd, ['diff', '--name-only', '--no-renames', '-z', candidate, commit, '--'], { allowFailure: true }).catch(
      () => undefined,
    );
    if (diff?.code !== 0) {
      unknown.push(candidate);
      continue;
    }
    const changed = diff.stdout.split('\0').filter((p) => p.length > 0);
    if (changed.length > 0 && changed.every((p) => allowed.has(p))) equivalent.set(candidate, changed);
  }
  return { equivalent, unknown };
}

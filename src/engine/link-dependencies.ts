// A new worktree has the repository's tracked files only: installed dependencies (node_modules,
// a Python .venv) are missing, so its tests could not run. When git ignores such a folder, the
// worktree gets a real folder of that name whose entries link to the main checkout's. (A real
// folder, not one symlink: ignore patterns like "node_modules/" match folders only, and a symlink
// would show up as a new file that `git add -A` commits.)
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { runGit } from '../git/run-git.js';

export const DEPENDENCY_FOLDERS = ['node_modules', '.venv'];

export async function linkDependencyFolders(repoRoot: string, worktree: string): Promise<string[]> {
  const linked: string[] = [];
  for (const name of DEPENDENCY_FOLDERS) {
    const source = join(repoRoot, name);
    const target = join(worktree, name);
    let created = false;
    try {
      if (!existsSync(source) || !lstatSync(source).isDirectory() || existsSync(target)) continue;
      const ignored = await runGit(worktree, ['check-ignore', '-q', '--no-index', `${name}/`], { allowFailure: true });
      if (ignored.code !== 0) continue;
      mkdirSync(target);
      created = true;
      for (const entry of readdirSync(source)) symlinkSync(join(source, entry), join(target, entry));
      // Belt and braces: if git would see anything there, take it away again.
      const status = await runGit(worktree, ['status', '--porcelain', '--untracked-files=all', '--', name], { allowFailure: true });
      if (status.code !== 0 || status.stdout.trim().length > 0) {
        rmSync(target, { recursive: true, force: true });
        continue;
      }
      linked.push(name);
    } catch {
      // Without the links the task still runs; its commands may need to install dependencies.
      if (created) rmSync(target, { recursive: true, force: true });
    }
  }
  return linked;
}

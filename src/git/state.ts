// Git state of a working tree in one `git status` call: branch, commit, dirty, changed paths.
import { runGit } from './run-git.js';

export interface GitState {
  branch: string;
  /** Undefined before the first commit. */
  commit: string | undefined;
  dirty: boolean;
  /** Paths (relative to the tree root) with staged, unstaged or untracked changes. */
  changed: string[];
}

export function parseStatusV2(output: string): GitState {
  let branch = '';
  let commit: string | undefined;
  const changed: string[] = [];
  const fields = output.split('\0');
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (f.startsWith('# branch.oid ')) {
      const oid = f.slice('# branch.oid '.length);
      commit = oid === '(initial)' ? undefined : oid;
    } else if (f.startsWith('# branch.head ')) {
      const head = f.slice('# branch.head '.length);
      branch = head === '(detached)' ? 'HEAD' : head;
    } else if (f.startsWith('1 ')) {
      changed.push(f.split(' ').slice(8).join(' '));
    } else if (f.startsWith('2 ')) {
      changed.push(f.split(' ').slice(9).join(' '));
      i++; // the original path follows as its own field
    } else if (f.startsWith('u ')) {
      changed.push(f.split(' ').slice(10).join(' '));
    } else if (f.startsWith('? ')) {
      changed.push(f.slice(2));
    }
  }
  return { branch, commit, dirty: changed.length > 0, changed };
}

export async function readGitState(worktree: string): Promise<GitState> {
  const { stdout } = await runGit(worktree, ['status', '--porcelain=v2', '--branch', '-z']);
  return parseStatusV2(stdout);
}

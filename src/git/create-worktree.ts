// What task creation needs from git: the commit to start from, free branch names, a new worktree.
import { chmodSync } from 'node:fs';
import { PRIVATE_DIR_MODE } from '../store/atomic-write.js';
import { runGit } from './run-git.js';

export async function headCommit(repo: string): Promise<string | undefined> {
  const { stdout, code } = await runGit(repo, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { allowFailure: true });
  return code === 0 ? stdout.trim() : undefined;
}

export async function branchExists(repo: string, branch: string): Promise<boolean> {
  const { code } = await runGit(repo, ['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], { allowFailure: true });
  return code === 0;
}

export async function isValidBranchName(repo: string, branch: string): Promise<boolean> {
  const { code } = await runGit(repo, ['check-ref-format', '--branch', branch], { allowFailure: true });
  return code === 0;
}

/** `git worktree add -b <branch> <path> <startPoint>`: a new branch checked out at `path`. */
export async function addWorktree(repo: string, path: string, branch: string, startPoint: string): Promise<void> {
  await runGit(repo, ['worktree', 'add', '--quiet', '-b', branch, path, startPoint]);
  // git makes the folder under the person's umask; atlas keeps it private (its contents, the
  // repository's own files, keep their modes).
  chmodSync(path, PRIVATE_DIR_MODE);
}

// Saving work before recovery resets a working tree (DESIGN §6: nothing is lost). The whole tree
// (staged, unstaged and untracked files, not ignored ones) becomes a commit built with a temporary
// index, so the real index and the files are not touched, and a branch
// atlas/recovery/<task-id>/<YYYYMMDD-HHMMSS> points at it. When some changes were staged
// differently from the files on disk, the staged tree is kept too, as the commit's second parent
// (the way `git stash` does).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { copyIndex } from '../git/files-tree.js';
import { whileIndexLocked } from '../git/index-lock.js';
import { runGit } from '../git/run-git.js';
import { readGitState } from '../git/state.js';
import type { SubmoduleWork } from './save-submodules.js';
import { gitlinkAt, listSubmodules, refusal } from './save-submodules.js';

export type SavedWork =
  | {
      saved: true;
      branch: string;
      commit: string;
      /** HEAD when the work was saved (the saved commit's first parent). */
      head: string | undefined;
      /** Paths with uncommitted changes that the commit holds (empty when only commits were saved). */
      files: string[];
      /** The commit holding the staged state, when it differed from both HEAD and the files. */
      index_commit?: string;
      message: string;
      /** Submodules whose own uncommitted work was saved in their repositories. */
      submodules?: SubmoduleWork[];
    }
  | { saved: false; head: string | undefined; message: string; submodules?: SubmoduleWork[] };

export interface SaveWorkOptions {
  worktree: string;
  taskId: string;
  now?: Date;
  /**
   * The commit a reset is about to move the branch to. When the tree is clean but HEAD has commits
   * the target lacks, the branch is saved anyway so those commits stay reachable.
   */
  resetTarget?: string;
  /** Why the work is being saved, for the commit message. */
  reason?: string;
  /** Also save each submodule's work (default); false for a submodule itself (the list is recursive). */
  submodules?: boolean;
}

function stamp(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

async function revParse(worktree: string, rev: string): Promise<string | undefined> {
  const { stdout, code } = await runGit(worktree, ['rev-parse', '--verify', '--quiet', rev], { allowFailure: true });
  return code === 0 ? stdout.trim() : undefined;
}

/** commit-tree needs an identity; a repository without one still gets its work saved. */
async function identityEnv(worktree: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const name = await runGit(worktree, ['config', 'user.name'], { allowFailure: true });
  const email = await runGit(worktree, ['config', 'user.email'], { allowFailure: true });
  if (name.code !== 0 || !name.stdout.trim()) Object.assign(env, { GIT_AUTHOR_NAME: 'atlas', GIT_COMMITTER_NAME: 'atlas' });
  if (email.code !== 0 || !email.stdout.trim())
    Object.assign(env, { GIT_AUTHOR_EMAIL: 'atlas@localhost', GIT_COMMITTER_EMAIL: 'atlas@localhost' });
  return env;
}

/** Creates refs/heads/<base>[-N] at `commit`, never moving an existing branch. */
async function createBranch(worktree: string, base: string, commit: string): Promise<string> {
  for (let n = 1; n < 100; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    // An empty old value makes update-ref fail if the ref already exists.
    const { code } = await runGit(worktree, ['update-ref', `refs/heads/${name}`, commit, ''], { allowFailure: true });
    if (code === 0) return name;
  }
  throw new AtlasError(`could not create a branch ${base} to save work`, { exitCode: EXIT.failure });
}

/** Trees of the files on disk and of the staged state, each built in a copy of the real index. */
async function buildTrees(worktree: string, env: Record<string, string>): Promise<{ tree: string; indexTree: string | undefined }> {
  const dir = mkdtempSync(join(tmpdir(), 'atlas-save-'));
  try {
    const filesIndex = join(dir, 'files.index');
    const stagedIndex = join(dir, 'staged.index');
    if (await copyIndex(worktree, filesIndex)) await copyIndex(worktree, stagedIndex);
    await runGit(worktree, ['add', '-A', '--', '.'], { env: { ...env, GIT_INDEX_FILE: filesIndex } });
    const tree = (await runGit(worktree, ['write-tree'], { env: { ...env, GIT_INDEX_FILE: filesIndex } })).stdout.trim();
    let indexTree: string | undefined;
    if (existsSync(stagedIndex)) {
      // Fails with unmerged entries (a conflict in progress): the files' tree has them as on disk.
      const staged = await runGit(worktree, ['write-tree'], { env: { ...env, GIT_INDEX_FILE: stagedIndex }, allowFailure: true });
      if (staged.code === 0) indexTree = staged.stdout.trim();
    }
    return { tree, indexTree };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Saves every uncommitted change of `worktree` on a new atlas/recovery/ branch, leaving the tree
 * and index as they are; each submodule's own work likewise, in its repository. Throws (exit 5)
 * when a submodule's work cannot be saved: the caller must not reset then.
 */
export async function saveWork(options: SaveWorkOptions): Promise<SavedWork> {
  const submodules = options.submodules === false ? [] : await saveSubmodules(options);
  const saved = await saveTree(options);
  if (submodules.length === 0) return saved;
  const note = submodules
    .map((s) => `submodule ${s.path}: ${s.files.length} changed path${s.files.length === 1 ? '' : 's'} saved on its branch ${s.branch}`)
    .join('; ');
  return {
    ...saved,
    submodules,
    message: saved.saved ? `${saved.message}; ${note}` : `${note} (the superproject has no uncommitted changes)`,
  };
}

async function saveSubmodules(options: SaveWorkOptions): Promise<SubmoduleWork[]> {
  const out: SubmoduleWork[] = [];
  for (const sub of await listSubmodules(options.worktree)) {
    let saved: SavedWork;
    try {
      saved = await saveTree({
        ...options,
        worktree: sub.dir,
        resetTarget: await gitlinkAt(options.worktree, options.resetTarget, sub.path),
        reason: `${options.reason ?? 'Uncommitted work saved before the superproject was reset.'} (submodule ${sub.path})`,
      });
    } catch (error) {
      throw refusal(options.worktree, `submodule ${sub.path} could not be saved`, error instanceof Error ? error.message : String(error));
    }
    if (saved.saved) out.push({ path: sub.path, branch: saved.branch, commit: saved.commit, files: saved.files });
  }
  return out;
}

async function saveTree(options: SaveWorkOptions & { resetTarget?: string | undefined }): Promise<SavedWork> {
  const { worktree } = options;
  if (!existsSync(worktree)) {
    throw new AtlasError(`the task's working tree ${worktree} does not exist`, { exitCode: EXIT.notFound });
  }
  const now = options.now ?? new Date();
  const base = `atlas/recovery/${options.taskId}/${stamp(now)}`;
  const head = await revParse(worktree, 'HEAD^{commit}');
  const state = await readGitState(worktree);
  const env = await identityEnv(worktree);

  let tree: string | undefined;
  let indexTree: string | undefined;
  if (state.dirty) ({ tree, indexTree } = await buildTrees(worktree, env));
  const headTree = head ? await revParse(worktree, `${head}^{tree}`) : undefined;
  const filesChanged = tree !== undefined && tree !== headTree;
  const stagedApart = indexTree !== undefined && indexTree !== tree && indexTree !== headTree;

  if (!filesChanged && !stagedApart) {
    const target = options.resetTarget;
    if (head && target && head !== target) {
      const ancestor = await runGit(worktree, ['merge-base', '--is-ancestor', head, target], { allowFailure: true });
      if (ancestor.code !== 0) {
        const branch = await createBranch(worktree, base, head);
        return {
          saved: true,
          branch,
          commit: head,
          head,
          files: [],
          message: `no uncommitted changes; commits on ${head.slice(0, 12)} that the reset leaves behind are saved on branch ${branch}`,
        };
      }
    }
    return { saved: false, head, message: 'the working tree has no uncommitted changes: nothing to save' };
  }

  const subject = `atlas: work saved by recovery of ${options.taskId}`;
  const body = [
    subject,
    '',
    options.reason ?? 'Uncommitted work (staged, unstaged and untracked files) saved before the working tree was reset.',
    '',
    `Restore the files: git checkout <this branch> -- .  (then git reset to unstage)`,
  ].join('\n');
  const parentArgs = head ? ['-p', head] : [];
  let indexCommit: string | undefined;
  if (stagedApart) {
    indexCommit = (
      await runGit(worktree, ['commit-tree', indexTree!, ...parentArgs, '-m', `atlas: staged changes of ${options.taskId}`], { env })
    ).stdout.trim();
  }
  const commit = (
    await runGit(worktree, ['commit-tree', tree ?? headTree!, ...parentArgs, ...(indexCommit ? ['-p', indexCommit] : []), '-m', body], {
      env,
    })
  ).stdout.trim();
  const branch = await createBranch(worktree, base, commit);
  const count = state.changed.length;
  const result: SavedWork = {
    saved: true,
    branch,
    commit,
    head,
    files: state.changed,
    message: `${count} changed path${count === 1 ? '' : 's'} saved on branch ${branch} (commit ${commit.slice(0, 12)})`,
  };
  if (indexCommit) result.index_commit = indexCommit;
  return result;
}

/**
 * Brings the working tree to `commit`: reset --hard, then remove untracked files (ignored files
 * stay). Destroys uncommitted work: call saveWork first (saveAndReset does both). Submodules are
 * reset too (when submodule.recurse asks for it) only with `submodulesSaved`: saveWork saved them.
 */
export async function resetToCheckpoint(worktree: string, commit: string, options: { submodulesSaved?: boolean } = {}): Promise<void> {
  const exists = await runGit(worktree, ['cat-file', '-e', `${commit}^{commit}`], { allowFailure: true });
  if (exists.code !== 0) {
    throw new AtlasError(`commit ${commit} of the checkpoint is not in the repository`, {
      exitCode: EXIT.failure,
      hint: 'it may have been rebased away or garbage-collected; choose another action (retry_step or manual)',
    });
  }
  // A git that the killed atlas left running may still hold the index for a moment.
  await whileIndexLocked(() =>
    runGit(worktree, [...(options.submodulesSaved ? [] : ['-c', 'submodule.recurse=false']), 'reset', '--hard', '--quiet', commit]),
  );
  await runGit(worktree, ['clean', '-fd', '--quiet']);
}

/** saveWork, then resetToCheckpoint; the reset never runs unless the save succeeded. */
export async function saveAndReset(options: SaveWorkOptions & { commit: string }): Promise<SavedWork> {
  const exists = await runGit(options.worktree, ['cat-file', '-e', `${options.commit}^{commit}`], { allowFailure: true });
  if (exists.code !== 0) {
    throw new AtlasError(`commit ${options.commit} of the checkpoint is not in the repository`, {
      exitCode: EXIT.failure,
      hint: 'it may have been rebased away or garbage-collected; choose another action (retry_step or manual)',
    });
  }
  const saved = await saveWork({ ...options, resetTarget: options.commit });
  await resetToCheckpoint(options.worktree, options.commit, { submodulesSaved: options.submodules !== false });
  return saved;
}

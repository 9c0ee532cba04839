// `atlas recover --from-store [TASK]`: bring a task that was pushed from another machine (or
// before this disk was lost) into this ATLAS_HOME and this repository: its own folder, a working
// tree on its branch, and its workspace's files; then recovery goes on as usual.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/schema.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import type { SyncStats } from '../../domain/sync-plan.js';
import { TASK_ID_PATTERN, TASK_SCHEMA_VERSION } from '../../domain/task.js';
import { branchExists, headCommit } from '../../git/create-worktree.js';
import { locateWorktree } from '../../git/locate.js';
import { runGit } from '../../git/run-git.js';
import { taskDir, taskFiles, workspaceDir } from '../../store/paths.js';
import { listTaskRefs, readTask, readWorkspace, saveWorkspace, updateTask } from '../../store/task-store.js';
import type { StoredTask, SyncStore } from '../stores/store.js';
import { taskTree } from '../stores/store.js';
import { checkTreeName } from '../stores/target.js';
import { pullTree } from './pull.js';

export interface FetchTaskOptions {
  home: string;
  cwd: string;
  taskId?: string;
  config: Config;
  store: SyncStore;
  warn: (text: string) => void;
}

export interface FetchedTask {
  task_id: string;
  workspace: string;
  task_dir: string;
  worktree: string;
  task_stats: SyncStats;
  workspace_stats: SyncStats;
}

async function chooseTask(store: SyncStore, taskId: string | undefined): Promise<StoredTask> {
  if (taskId !== undefined && !TASK_ID_PATTERN.test(taskId)) {
    throw new AtlasError(`"${taskId}" is not a task id (task-YYYYMMDD-HHMMSS)`, { exitCode: EXIT.input });
  }
  const all = (await store.listTaskIndex()).sort((a, b) => (a.id < b.id ? 1 : -1));
  const matches = taskId === undefined ? all : all.filter((t) => t.id === taskId);
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) {
    throw new AtlasError(taskId ? `no task ${taskId} in ${store.location}` : `${store.location} holds no task`, {
      exitCode: EXIT.notFound,
      hint: 'a task travels when its workspace is pushed: run `atlas sync push --task ID` on the machine that has it',
    });
  }
  const list = matches
    .slice(0, 20)
    .map((t) => `  ${t.id} (workspace ${t.workspace})`)
    .join('\n');
  throw new AtlasError(
    taskId
      ? `task ${taskId} is stored under several workspaces:\n${list}`
      : `${store.location} holds ${matches.length} tasks; say which one:\n${list}`,
    { exitCode: EXIT.notFound, hint: 'atlas recover --from-store TASK-ID' },
  );
}

/** A working tree for the task's branch here: the branch if this clone has it, else a new one from its base commit. */
async function makeWorktree(
  repoRoot: string,
  worktree: string,
  branch: string,
  baseCommit: string | undefined,
  warn: (t: string) => void,
): Promise<void> {
  if (await branchExists(repoRoot, branch)) {
    await runGit(repoRoot, ['worktree', 'add', '--quiet', worktree, branch]);
    return;
  }
  let start = baseCommit;
  if (!start || (await runGit(repoRoot, ['cat-file', '-e', `${start}^{commit}`], { allowFailure: true })).code !== 0) {
    start = await headCommit(repoRoot);
    if (!start)
      throw new AtlasError(`${repoRoot} has no commits to start the task's working tree from`, {
        exitCode: EXIT.failure,
        hint: 'fetch the repository first (git fetch)',
      });
    warn(
      `the task's base commit ${baseCommit?.slice(0, 12) ?? '(unknown)'} is not in ${repoRoot}; its working tree starts from HEAD (${start.slice(0, 12)}), and the stored files are laid over it`,
    );
  }
  await runGit(repoRoot, ['worktree', 'add', '--quiet', '-b', branch, worktree, start]);
}

export async function fetchTaskFromStore(options: FetchTaskOptions): Promise<FetchedTask> {
  const { home, store, warn } = options;
  const here = locateWorktree(options.cwd);
  if (!here) {
    throw new AtlasError("atlas recover --from-store runs inside a clone of the task's repository", {
      exitCode: EXIT.input,
      hint: 'cd into the repository (git clone it first), then run it again',
    });
  }
  await store.checkAccess({ reading: true });
  const { workspace, id } = await chooseTask(store, options.taskId);
  checkTreeName(workspace, 'workspace');
  if (listTaskRefs(home).some((r) => r.id === id)) {
    throw new AtlasError(`task ${id} is already in ${home}`, {
      exitCode: EXIT.input,
      hint: `atlas recover --task ${id} continues it; atlas sync pull --task ${id} updates its working tree`,
    });
  }
  const worktreeHome = join(workspaceDir(workspace, home), 'worktree');
  if (existsSync(worktreeHome) || readWorkspace(workspace, home)) {
    throw new AtlasError(`workspace ${workspace} already exists in ${home}`, {
      exitCode: EXIT.input,
      hint: 'remove it (atlas cleanup, or by hand) or use another ATLAS_HOME',
    });
  }
  const deps = { store, config: options.config, warn };
  const dir = taskDir(workspace, id, home);
  const taskStats = await pullTree({ root: dir, tree: taskTree(workspace, id), force: true }, deps);
  mkdirSync(taskFiles(dir).artifacts, { recursive: true });
  const stored = readTask(dir);
  if (stored.id !== id || stored.workspace_id !== workspace) {
    throw new AtlasError(`the stored task.json of ${id} names task ${stored.id} in workspace ${stored.workspace_id}; refused`, {
      exitCode: EXIT.input,
    });
  }
  const worktree = stored.in_place ? here.root : worktreeHome;
  if (!stored.in_place) await makeWorktree(here.root, worktree, stored.branch, stored.base_commit, warn);
  const now = new Date().toISOString();
  await updateTask(dir, (t) => ({ ...t, repo_root: here.root, worktree }));
  await saveWorkspace(
    {
      schema_version: TASK_SCHEMA_VERSION,
      name: workspace,
      repo_root: here.root,
      worktree,
      branch: stored.branch,
      created_at: now,
      updated_at: now,
      tasks: [id],
    },
    home,
  );
  // A fresh working tree holds only what git has: overwriting it loses nothing. An in-place task
  // lands in the person's checkout, where changed files stop the pull instead.
  const workspaceStats = await pullTree({ root: worktree, tree: workspace, force: !stored.in_place }, deps);
  return { task_id: id, workspace, task_dir: dir, worktree, task_stats: taskStats, workspace_stats: workspaceStats };
}

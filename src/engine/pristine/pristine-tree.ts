// Pristine validation (validation.tree: pristine): the commands a receipt attests run on a fresh
// copy of the task's files (what `git add -A` would commit: tracked and new files, never ignored
// ones such as a node_modules the agent could have swapped), in a folder of the task's own that no
// step could write before, with dependency folders from where no step could write either
// (dependency-cache.ts: a setup fills the cache only when it runs on the task's base commit). In
// sandbox mode the commands run sandboxed there, writing only in it.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/schema.js';
import type { Task } from '../../domain/task.js';
import { treeExecutor } from '../../exec/task-executor.js';
import type { ExecutionMode, ProcessExecutor } from '../../exec/types.js';
import { checkoutTree, filesTree, storeEnv } from '../../git/files-tree.js';
import { runGit } from '../../git/run-git.js';
import { workObjectDir } from '../../git/task-objects.js';
import {
  cachedDependencies,
  checkDependencyFolders,
  DEPENDENCY_INPUTS,
  repositoryDependencies,
  uncachedDependencies,
} from './dependency-cache.js';

export interface PristineTree {
  dir: string;
  /** The receipt's `dependencies`. */
  dependencies: string;
  executor: ProcessExecutor;
  /** Removes the tree (the dependency cache stays). */
  close(): Promise<void>;
}

export interface PristineInput {
  home: string;
  task: Task;
  taskDir: string;
  config: Config;
  mode: ExecutionMode;
  /** Runs one setup command in the tree with the tree's executor; throws when it fails. */
  runSetup(command: string, dir: string, executor: ProcessExecutor): Promise<void>;
}

export async function preparePristineTree(input: PristineInput): Promise<PristineTree> {
  const { home, task, taskDir, config } = input;
  const folders = checkDependencyFolders(config.validation.dependencies);
  const dir = join(taskDir, 'pristine');
  // Whatever an earlier run left there goes: the tree is made from nothing every time.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const executor = await treeExecutor({ task, taskDir, home, config }, input.mode, dir);
  const close = async () => {
    await executor.close?.();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // The task's uncommitted files become objects of the task's own store, not the repository's.
    const store = workObjectDir(taskDir);
    rmSync(store, { recursive: true, force: true });
    const tree = await filesTree(task.worktree, store);
    await checkoutTree(task.worktree, tree, dir, store);
    const setup = config.validation.setup;
    const runIn = (target: string, on: ProcessExecutor) => async () => {
      for (const command of setup) await input.runSetup(command, target, on);
    };
    let dependencies: string;
    if (setup.length === 0) dependencies = repositoryDependencies(dir, task.repo_root, task.in_place, folders);
    else if (task.base_commit && (await sameSetupInputs(task.worktree, task.base_commit, tree, store))) {
      dependencies = (await cachedDependencies(home, dir, setup, folders, () => buildAtBase(input, task.base_commit!, runIn))).source;
    } else dependencies = (await uncachedDependencies(dir, setup, folders, runIn(dir, executor))).source;
    return { dir, dependencies, executor, close };
  } catch (error) {
    await close();
    throw error;
  } finally {
    rmSync(baseDir(taskDir), { recursive: true, force: true });
  }
}

/** Where the setup runs on the task's base commit, to fill the cache. */
function baseDir(taskDir: string): string {
  return join(taskDir, 'pristine-base');
}

/** The setup's inputs (lockfiles, manifests) are the same in the base commit and in `tree`. */
export async function sameSetupInputs(worktree: string, base: string, tree: string, store?: string): Promise<boolean> {
  // Plumbing (no textconv, no external diff): exit 0 when the paths' entries are the same, 1 when not.
  const diff = await runGit(worktree, ['diff-tree', '--quiet', base, tree, '--', ...DEPENDENCY_INPUTS], {
    allowFailure: true,
    env: storeEnv(worktree, store),
  });
  return diff.code === 0;
}

/** Checks the base commit out (no step wrote it) and runs the setup there; returns the folder. */
async function buildAtBase(
  input: PristineInput,
  base: string,
  runIn: (target: string, on: ProcessExecutor) => () => Promise<void>,
): Promise<string> {
  const { task, taskDir, home, config } = input;
  const dir = baseDir(taskDir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await checkoutTree(task.worktree, base, dir);
  const executor = await treeExecutor({ task, taskDir, home, config }, input.mode, dir);
  try {
    await runIn(dir, executor)();
  } finally {
    await executor.close?.();
  }
  return dir;
}

// Pristine validation (validation.tree: pristine): the commands a receipt attests run on a fresh
// copy of the task's files (what `git add -A` would commit: tracked and new files, never ignored
// ones such as a node_modules the agent could have swapped), in a folder of the task's own that no
// step could write before, with dependency folders from where no step could write either
// (dependency-cache.ts). In sandbox mode the commands run sandboxed there, writing only in it.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/schema.js';
import type { Task } from '../../domain/task.js';
import { treeExecutor } from '../../exec/task-executor.js';
import type { ExecutionMode, ProcessExecutor } from '../../exec/types.js';
import { checkoutTree, filesTree } from '../../git/files-tree.js';
import { workObjectDir } from '../../git/task-objects.js';
import { cachedDependencies, checkDependencyFolders, repositoryDependencies } from './dependency-cache.js';

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
    await checkoutTree(task.worktree, await filesTree(task.worktree, store), dir, store);
    const setup = config.validation.setup;
    const dependencies =
      setup.length > 0
        ? (await cachedDependencies(home, dir, setup, folders, async () => {
            for (const command of setup) await input.runSetup(command, dir, executor);
          })).source
        : repositoryDependencies(dir, task.repo_root, task.in_place, folders);
    return { dir, dependencies, executor, close };
  } catch (error) {
    await close();
    throw error;
  }
}

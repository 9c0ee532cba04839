// `atlas start`: creates the workspace, the task (task.json with the template's steps), its hook
// in `initializing`, and the place it runs: by default a new branch in a git worktree under
// $ATLAS_HOME/workspaces/<workspace>/worktree, or the current checkout (--in-place).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { assertAgentConfigured } from '../agent/configured.js';
import type { Config } from '../config/schema.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import { newHook } from '../domain/hook.js';
import type { Task, Workspace } from '../domain/task.js';
import { slugify, TASK_SCHEMA_VERSION } from '../domain/task.js';
import type { Template } from '../domain/template.js';
import { toTimestamp } from '../domain/time.js';
import { addWorktree, branchExists, headCommit, isValidBranchName } from '../git/create-worktree.js';
import { locateWorktree } from '../git/locate.js';
import { readGitState } from '../git/state.js';
import { HookManager } from '../hook/manager.js';
import { ownerRecordForThisProcess, removeOwner, writeOwner } from '../liveness/owner.js';
import { PRIVATE_DIR_MODE } from '../store/atomic-write.js';
import { taskFiles, workspaceDir } from '../store/paths.js';
import { allocateTaskIndex } from '../store/task-index.js';
import type { TaskRef } from '../store/task-store.js';
import { claimTaskDir, saveWorkspace, writeTask } from '../store/task-store.js';
import { resolveValidationCommands } from '../templates/detect-validation.js';
import { linkDependencyFolders } from './link-dependencies.js';

export interface CreateTaskOptions {
  home: string;
  cwd: string;
  config: Config;
  template: Template;
  description: string;
  /** Workspace name (default: from the description); a suffix is added if it is taken. */
  workspace?: string | undefined;
  /** Run in the current checkout on its current branch. */
  inPlace?: boolean | undefined;
  now?: Date;
  warn?: (text: string) => void;
  note?: (text: string) => void;
}

export interface CreatedTask {
  ref: TaskRef;
  task: Task;
  workspace: Workspace;
}

const WORKSPACE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/i;

/** Problems that would only surface steps later (no agent, nothing to validate) stop the start. */
function preflight(template: Template, config: Config, dir: string): void {
  if (template.steps.some((s) => s.type === 'ai')) assertAgentConfigured(config.ai);
  for (const step of template.steps) {
    if (step.type === 'validation') resolveValidationCommands(step.commands, config.validation.commands, dir);
  }
}

async function chooseWorkspace(base: string, home: string, repo: string, branchPrefix: string | undefined): Promise<string> {
  mkdirSync(join(home, 'workspaces'), { recursive: true, mode: PRIVATE_DIR_MODE });
  for (let n = 1; n < 1000; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (existsSync(workspaceDir(name, home))) continue;
    if (branchPrefix !== undefined && (await branchExists(repo, `${branchPrefix}${name}`))) continue;
    try {
      // Not recursive: of two starts racing for a name, exactly one creates the folder.
      mkdirSync(workspaceDir(name, home), { mode: PRIVATE_DIR_MODE });
      return name;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
  }
  throw new AtlasError(`could not find a free workspace name starting with "${base}"`, {
    exitCode: EXIT.failure,
    hint: 'pass --workspace NAME',
  });
}

export async function createTask(options: CreateTaskOptions): Promise<CreatedTask> {
  const { home, config, template } = options;
  const here = locateWorktree(options.cwd);
  if (!here) {
    throw new AtlasError(`${options.cwd} is not inside a git repository`, {
      exitCode: EXIT.notFound,
      hint: 'atlas runs tasks in git repositories: cd into one, or create it with `git init && git add -A && git commit -m init`',
    });
  }
  const repoRoot = here.root;
  const inPlace = Boolean(options.inPlace) || !template.worktree || !config.git.worktree;
  preflight(template, config, repoRoot);

  const baseCommit = await headCommit(repoRoot);
  if (!inPlace && !baseCommit) {
    throw new AtlasError(`the repository at ${repoRoot} has no commits yet, and a task's worktree starts from a commit`, {
      exitCode: EXIT.input,
      hint: 'make a first commit (git add -A && git commit -m init), or run the task in this checkout with --in-place',
    });
  }
  if (options.workspace !== undefined && !WORKSPACE_NAME.test(options.workspace)) {
    throw new AtlasError(`"${options.workspace}" is not a workspace name`, {
      exitCode: EXIT.input,
      hint: 'use letters, digits, ".", "-" and "_" (at most 64 characters), starting with a letter or digit',
    });
  }
  const description = options.description.trim() || template.description || template.name;
  const base = options.workspace ?? slugify(options.description.trim() || template.name);
  if (!inPlace && !(await isValidBranchName(repoRoot, `${template.branch_prefix}${base}`))) {
    throw new AtlasError(`"${template.branch_prefix}${base}" is not a valid branch name`, {
      exitCode: EXIT.input,
      hint: 'pass another --workspace NAME',
    });
  }
  const name = await chooseWorkspace(base, home, repoRoot, inPlace ? undefined : template.branch_prefix);

  const now = options.now ?? new Date();
  const at = toTimestamp(now);
  const ref = claimTaskDir(name, now, home);
  // Owned from the first moment: a start killed during setup is judged crashed at once (its pid is
  // gone) rather than looking like a task that is still starting. The runner takes the record over.
  const ownerPath = taskFiles(ref.dir).owner;
  writeOwner(
    ownerPath,
    ownerRecordForThisProcess({ heartbeatIntervalMs: config.hooks.heartbeat_interval, staleThresholdMs: config.hooks.stale_threshold }),
  );
  const taskIndex = await allocateTaskIndex(home);
  const worktree = inPlace ? repoRoot : join(workspaceDir(name, home), 'worktree');
  const branch = inPlace ? (here.branch ?? 'HEAD') : `${template.branch_prefix}${name}`;

  const task: Task = {
    schema_version: TASK_SCHEMA_VERSION,
    id: ref.id,
    workspace_id: name,
    template: template.name,
    description,
    created_at: at,
    updated_at: at,
    status: 'initializing',
    repo_root: repoRoot,
    worktree,
    in_place: inPlace,
    branch,
    ...(here.branch ? { base_branch: here.branch } : {}),
    ...(baseCommit ? { base_commit: baseCommit } : {}),
    steps: template.steps,
    ...(template.lifecycle ? { lifecycle: template.lifecycle } : {}),
    ...(template.control_paths?.length ? { control_paths: template.control_paths } : {}),
    task_index: taskIndex,
    ...(config.validation.commands.length > 0 ? { validation_commands: [...config.validation.commands] } : {}),
    execution_mode: config.execution.mode,
  };
  writeTask(ref.dir, task);
  const workspace: Workspace = {
    schema_version: TASK_SCHEMA_VERSION,
    name,
    repo_root: repoRoot,
    worktree,
    branch,
    created_at: at,
    updated_at: at,
    tasks: [ref.id],
  };
  await saveWorkspace(workspace, home);
  const manager = new HookManager(ref, { maxCheckpoints: config.hooks.max_checkpoints });
  await manager.create({ ...newHook(ref.id, name, at), task_index: taskIndex });

  if (!inPlace) {
    try {
      const state = await readGitState(repoRoot);
      if (state.dirty) {
        options.warn?.(
          `uncommitted changes in ${repoRoot} are not part of the task: its worktree starts from ${baseCommit!.slice(0, 12)} (commit them first, or use --in-place)`,
        );
      }
    } catch {
      // Only a courtesy warning.
    }
    try {
      await addWorktree(repoRoot, worktree, branch, baseCommit!);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await manager.transition({ to: 'failed', trigger: 'setup_failed', details: { error: message } });
      removeOwner(ownerPath);
      throw new AtlasError(`could not create the task's worktree at ${worktree}: ${message}`, {
        exitCode: EXIT.failure,
        hint: 'check `git worktree list` in the repository; or run the task in this checkout with --in-place',
        cause: error,
      });
    }
    const linked = await linkDependencyFolders(repoRoot, worktree);
    if (linked.length > 0) options.note?.(`linked ${linked.join(', ')} from ${repoRoot} into the task's worktree`);
  }
  return { ref, task, workspace };
}

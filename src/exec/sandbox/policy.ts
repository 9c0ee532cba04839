// The sandbox policy of one task: where its processes may write, what they may not read, which
// hosts they may reach. Built from the task, its git folders and configuration; recorded in the
// task folder (execution.json) and shown by `atlas doctor`.
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Config } from '../../config/schema.js';
import { commonGitDir } from '../../git/common-dir.js';
import { realpath, resolveGitDir } from '../../git/locate.js';
import { ensureObjectDir, overlayEnv, stepObjectDir } from '../../git/task-objects.js';
import { homePaths } from '../../store/paths.js';
import { gitProtectedPaths } from './git-protect.js';
import { PROTECTED_PATHS, treeControlPaths } from './protected-paths.js';
import { prepareSandboxHome } from './sandbox-home.js';

export interface SandboxPolicy {
  /** The task's working tree: the sandboxed processes' cwd. */
  worktree: string;
  /** TMPDIR inside the sandbox: a folder of this task's own. */
  tmpdir: string;
  /** $HOME inside the sandbox: a private, writable folder of this task's own (sandbox-home.ts). */
  home?: string;
  /** Writable (everything else is read-only). */
  allow_write: string[];
  /** Read-only even inside allow_write. */
  deny_write: string[];
  /** Unreadable (they appear empty inside the sandbox). */
  deny_read: string[];
  /** Readable again inside a deny_read folder (this task's own workspace folder). */
  allow_read?: string[];
  /** Hosts reachable through the sandbox's proxy; nothing else is. */
  allowed_domains: string[];
  /** Environment variables passed besides the built-in allow-list (execution.sandbox.env). */
  env?: string[];
  /** Git's object stores for the step: the task's own (written) over the repository's (read). */
  git_env?: Record<string, string>;
}

/** Secrets of the usual command-line tools, relative to the home folder. */
export const SECRET_PATHS = [
  '.ssh',
  '.aws',
  '.gnupg',
  '.config/gcloud',
  '.azure',
  '.kube',
  '.docker/config.json',
  '.config/gh',
  '.netrc',
  '.git-credentials',
  '.oci',
  '.config/doctl',
] as const;

export interface PolicyInput {
  task: { id: string; worktree: string; workspace_id: string };
  /** The task's folder under $ATLAS_HOME (its tmp/ is the sandbox's TMPDIR). */
  taskDir: string;
  home: string;
  config: Config;
  /** Worktrees of the other tasks atlas knows. */
  otherWorktrees: readonly string[];
  env?: NodeJS.ProcessEnv;
  userHome?: string;
}

/** The git folders a commit in `worktree` writes, when they lie outside it (a linked worktree). */
export function gitWritePaths(worktree: string): string[] {
  const dotGit = join(worktree, '.git');
  try {
    if (statSync(dotGit).isDirectory()) return [];
  } catch {
    return [];
  }
  const named = resolveGitDir(dotGit, worktree);
  if (!named) return [];
  const gitDir = realpath(named);
  const common = commonGitDir(gitDir);
  // Branch refs (with their logs) are shared; the index and the worktree's own reflog live in
  // worktrees/<name>. The repository's objects stay read-only: a step writes its own into the
  // task's store (src/git/task-objects.ts). Everything else stays read-only (protected-paths.ts
  // says why), and other branches' refs are denied one by one (a commit renames its ref's lock in
  // refs/heads).
  return [join(common, 'refs', 'heads'), join(common, 'logs'), gitDir];
}

/**
 * The step's git: the repository's objects (read-only in the sandbox) as an alternate, new ones
 * written to the task's store; nothing outside the sandbox reads that store but the crossing
 * (src/git/cross-objects.ts). The tree's HEAD and the repository's objects are read-only.
 */
export function stepGit(
  worktree: string,
  taskDir: string,
): { env: Record<string, string> | undefined; write: string[]; denyWrite: string[] } {
  const dotGit = join(worktree, '.git');
  const named = existsSync(dotGit) ? resolveGitDir(dotGit, worktree) : undefined;
  if (!named) return { env: undefined, write: [], denyWrite: [] };
  const gitDir = realpath(named);
  const common = commonGitDir(gitDir);
  const store = ensureObjectDir(stepObjectDir(taskDir));
  return { env: overlayEnv(common, store), write: [store], denyWrite: [join(common, 'objects'), join(gitDir, 'HEAD')] };
}

function expandHome(path: string, userHome: string): string {
  if (path === '~') return userHome;
  return path.startsWith('~/') ? join(userHome, path.slice(2)) : resolve(path);
}

/**
 * Paths in the worktree atlas itself keeps read-only: in a task that runs in the repository itself
 * (in place), `.atlas/` holds the configuration atlas reads for later runs (lifecycle hook
 * commands, git.pr_command run outside the sandbox): a sandboxed step must not rewrite it.
 */
export function atlasProtectedPaths(worktree: string): string[] {
  try {
    return statSync(join(worktree, '.git')).isDirectory() ? [join(worktree, '.atlas')] : [];
  } catch {
    return [];
  }
}

/** `inner` is `outer` or lies inside it. */
export function isInside(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel) && !rel.startsWith(`..${sep}`));
}

/** The model API host from ANTHROPIC_BASE_URL (host:port when it names a port), if set. */
function modelApiHost(env: NodeJS.ProcessEnv): string | undefined {
  const url = env['ANTHROPIC_BASE_URL'];
  if (!url) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  } catch {
    return undefined;
  }
}

/**
 * Claude Code keeps its sessions, todos and settings in its config folder ($CLAUDE_CONFIG_DIR or
 * ~/.claude, and ~/.claude.json): an `ai` step with agent claude cannot run without writing there.
 * Its settings files stay read-only (hooks there would run outside the sandbox later), existing or
 * not: an absent one gets an empty `{}` first (the sandbox's stand-in for an absent file is
 * unreadable, and Claude Code reads them), so a step cannot create one with hooks.
 */
export function agentStatePaths(config: Config, env: NodeJS.ProcessEnv, userHome: string): { write: string[]; denyWrite: string[] } {
  if (config.ai.agent !== 'claude') return { write: [], denyWrite: [] };
  const configDir = env['CLAUDE_CONFIG_DIR'] ? resolve(env['CLAUDE_CONFIG_DIR']) : join(userHome, '.claude');
  const write = [configDir, ...(env['CLAUDE_CONFIG_DIR'] ? [] : [join(userHome, '.claude.json')])];
  const settings = PROTECTED_PATHS.filter((e) => e.in === 'claude-config').map((e) => join(configDir, e.path));
  const denyWrite = existsSync(configDir) ? settings.filter((p) => existsSync(p) || placeholder(p)) : [];
  return { write: write.filter((p) => existsSync(p)), denyWrite };
}

function placeholder(path: string): boolean {
  try {
    writeFileSync(path, '{}\n', { flag: 'wx', mode: 0o600 });
    return true;
  } catch {
    return existsSync(path);
  }
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

export function buildPolicy(input: PolicyInput): SandboxPolicy {
  const userHome = input.userHome ?? homedir();
  const env = input.env ?? process.env;
  const sandbox = input.config.execution.sandbox;
  const worktree = realpath(input.task.worktree);
  const tmpdir = join(input.taskDir, 'tmp');
  const agent = agentStatePaths(input.config, env, userHome);
  const home = prepareSandboxHome(input.taskDir, userHome, agent.write);
  const git = stepGit(worktree, input.taskDir);
  const allowWrite = unique([
    worktree,
    ...gitWritePaths(worktree),
    ...git.write,
    tmpdir,
    home,
    ...agent.write,
    ...sandbox.allow_write.map((p) => expandHome(p, userHome)),
  ]);
  // What this task needs is never denied, even when it lies inside another task's folder (an
  // in-place task in the repository whose .git this task's commits write to).
  const needed = [worktree, ...allowWrite];
  const others = input.otherWorktrees.map((w) => resolve(w)).filter((w) => !needed.some((n) => isInside(n, w)) && !isInside(w, worktree));
  const paths = homePaths(input.home);
  // Whole parent folders, not one entry per other task or conversation: a wrap's cost must not grow
  // with their number. The sandbox library binds this task's writable folders back over them.
  const hidden = [paths.workspacesDir, join(input.home, 'server'), ...storeFolders(input.config, input.home)];
  const ownFiles = ownTaskFiles(input.taskDir, allowWrite);
  const denyRead = unique([
    paths.keysDir,
    ...SECRET_PATHS.map((p) => join(userHome, p)),
    ...hidden,
    ...others.filter((w) => !hidden.some((h) => isInside(w, h))),
    ...sandbox.deny_read.map((p) => expandHome(p, userHome)),
  ]);
  return {
    worktree,
    tmpdir,
    home,
    allow_write: allowWrite,
    deny_write: unique([
      ...atlasProtectedPaths(worktree),
      ...gitProtectedPaths(worktree),
      ...treeControlPaths(worktree),
      ...agent.denyWrite,
      ...git.denyWrite,
    ]),
    deny_read: denyRead,
    ...(ownFiles.length ? { allow_read: ownFiles } : {}),
    allowed_domains: allowedDomains(input.config, env),
    ...(sandbox.env.length ? { env: [...sandbox.env] } : {}),
    ...(git.env ? { git_env: git.env } : {}),
  };
}

/**
 * What stays readable of the task's own folder (its hook, HOOK.md, requests) under the hidden
 * parent: its entries one by one, leaving out the writable ones (a read-only bind of the whole
 * folder would cover its writable tmp/).
 */
function ownTaskFiles(taskDir: string, writable: readonly string[]): string[] {
  try {
    return readdirSync(taskDir)
      .map((n) => join(taskDir, n))
      .filter((p) => !writable.some((w) => isInside(w, p)));
  } catch {
    return [];
  }
}

/** The store's folders on this machine: the default one, and sync.store when it is a folder. */
export function storeFolders(config: Config, home: string): string[] {
  const out = [join(home, 'store')];
  const store = config.sync.store;
  if (store && !/^s3:\/\//i.test(store))
    out.push(store.startsWith('file://') ? decodeURIComponent(new URL(store).pathname) : resolve(store));
  return unique(out);
}

/** The hosts a sandboxed process may reach: the configured ones and the model API's. */
export function allowedDomains(config: Config, env: NodeJS.ProcessEnv = process.env): string[] {
  const api = modelApiHost(env);
  return unique([...config.execution.sandbox.allowed_domains, ...(api ? [api] : [])]);
}

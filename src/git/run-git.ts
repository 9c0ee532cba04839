// Runs git directly (execFile). Read paths that must stay fast (checkpoints fired from git hooks,
// status) use this instead of simple-git, whose load alone costs ~35 ms per invocation.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { AtlasError, EXIT } from '../domain/errors.js';
import { withPersonUmask } from '../store/private-umask.js';
import { gitLayout, layoutEnv } from './layout.js';
import { withSafeGitConfig } from './safe-config.js';

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface RunGitOptions {
  allowFailure?: boolean;
  /** Extra environment, applied after the hook variables are cleared (e.g. a temporary GIT_INDEX_FILE). */
  env?: Record<string, string>;
  /** Reads where the user's hooks live (atlas hook install): core.hooksPath is not overridden. */
  userHooks?: boolean;
  /** Written to git's stdin (closed after). */
  input?: string;
}

export function runGit(cwd: string, args: string[], options: RunGitOptions = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    let pinned: Record<string, string>;
    try {
      // `git init` and `git clone` make a repository: the one around cwd is not theirs to use.
      pinned = args[0] === 'init' || args[0] === 'clone' ? {} : layoutEnv(gitLayout(cwd));
    } catch (error) {
      reject(error);
      return;
    }
    // In the person's repository, git makes files under the person's umask (and core.sharedRepository).
    const child = withPersonUmask(() =>
      execFile(
        'git',
        args,
        { cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8', env: { ...gitEnv(options.userHooks === true), ...pinned, ...options.env } },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          if (error && (error as NodeJS.ErrnoException).code === 'ENOENT' && typeof error.code === 'string') {
            // spawn reports a missing cwd as ENOENT too: say which one is missing.
            if (!existsSync(cwd)) {
              reject(new AtlasError(`${cwd} does not exist (a working tree that was moved or removed?)`, { exitCode: EXIT.notFound }));
              return;
            }
            reject(
              new AtlasError('git is not installed or not on PATH', {
                exitCode: EXIT.failure,
                hint: 'install git (apt-get install git) and try again',
              }),
            );
            return;
          }
          if (code !== 0 && !options.allowFailure) {
            reject(new AtlasError(`git ${args.join(' ')} failed in ${cwd}: ${stderr.trim() || stdout.trim()}`, { exitCode: EXIT.failure }));
            return;
          }
          resolve({ stdout, stderr, code });
        },
      ),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/**
 * Git run by atlas inside a hook must not inherit the hook's GIT_DIR/GIT_INDEX_FILE. Optional locks
 * are off: atlas's `git status` (checkpoints, cleanup) must never rewrite the index, nor hold
 * index.lock while the user or the agent runs git in the same tree. SAFE_GIT_CONFIG keeps an
 * agent's submodule config from running commands (src/git/safe-config.ts); the git folders are
 * pinned to the layout git made, and a changed layout is refused (src/git/layout.ts).
 */
export function gitEnv(userHooks = false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_ATTR_NOSYSTEM: '1' };
  for (const key of [
    'GIT_DIR',
    'GIT_COMMON_DIR',
    'GIT_INDEX_FILE',
    'GIT_WORK_TREE',
    'GIT_PREFIX',
    'GIT_EXTERNAL_DIFF',
    'GIT_OBJECT_DIRECTORY',
    'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  ])
    delete env[key];
  return withSafeGitConfig(env, { hooks: userHooks });
}

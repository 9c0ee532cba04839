// The hooks directory git actually uses for a repository: `git rev-parse --git-path hooks`
// respects core.hooksPath, and from a linked worktree names the common directory's hooks, so
// hooks installed once fire in every worktree of the repository (atlas task worktrees included).
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { AtlasError, EXIT } from '../domain/errors.js';
import { realpath } from '../git/locate.js';
import { runGit } from '../git/run-git.js';

export interface HooksLocation {
  /** Top of the working tree the command was run for. */
  repoRoot: string;
  /** Absolute hooks directory. */
  hooksDir: string;
  /** core.hooksPath as configured, when set. */
  hooksPathConfig: string | undefined;
  /** Where core.hooksPath is set: global and system folders are shared by every repository. */
  hooksPathScope: 'local' | 'worktree' | 'global' | 'system' | 'command' | undefined;
}

export async function locateHooksDir(dir: string): Promise<HooksLocation> {
  const from = resolve(dir);
  if (!existsSync(from) || !statSync(from).isDirectory()) {
    throw new AtlasError(`${from} is not a directory`, { exitCode: EXIT.input, hint: 'pass --repo with the path of a git repository' });
  }
  const top = await runGit(from, ['rev-parse', '--show-toplevel'], { allowFailure: true });
  if (top.code !== 0) {
    throw new AtlasError(`${from} is not inside a git working tree`, {
      exitCode: EXIT.input,
      hint: 'run it inside your repository, or pass --repo DIR (run `git init` first for a new project)',
    });
  }
  const { stdout } = await runGit(from, ['rev-parse', '--git-path', 'hooks'], { userHooks: true });
  const raw = stdout.trim();
  // --show-scope prints "<scope>\t<value>" for the setting that wins.
  const config = await runGit(from, ['config', '--show-scope', '--get', 'core.hooksPath'], { allowFailure: true, userHooks: true });
  const line = config.code === 0 ? config.stdout.trim() : '';
  const tab = line.indexOf('\t');
  const hooksPathConfig = tab >= 0 && line.slice(tab + 1).length > 0 ? line.slice(tab + 1) : undefined;
  const scope = tab >= 0 ? line.slice(0, tab) : undefined;
  return {
    repoRoot: realpath(top.stdout.trim()),
    hooksDir: isAbsolute(raw) ? raw : resolve(from, raw),
    hooksPathConfig,
    hooksPathScope:
      hooksPathConfig !== undefined &&
      (scope === 'local' || scope === 'worktree' || scope === 'global' || scope === 'system' || scope === 'command')
        ? scope
        : undefined,
  };
}

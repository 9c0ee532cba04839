// `atlas claude install` / `uninstall`: atlas's hook handlers merged into a Claude Code settings
// file (project: .claude/settings.json, local: .claude/settings.local.json, user:
// ~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json) as text edits, so every other key
// and hook stays byte for byte; run again, it adds nothing; uninstall removes exactly what it added.

import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { claudeConfigDir } from '../../agent/claude-config-dir.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { locateWorktree } from '../../git/locate.js';
import { currentAtlasLocation } from '../../githooks/atlas-location.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { withLock } from '../../store/lock.js';
import { mkdirForPerson } from '../../store/private-umask.js';
import { claudePaths } from './places.js';
import { hookCommand, installHooks, uninstallHooks } from './settings.js';

export const INSTALL_SCOPES = ['project', 'local', 'user'] as const;
export type InstallScope = (typeof INSTALL_SCOPES)[number];

export function settingsPath(scope: InstallScope, cwd: string, env: NodeJS.ProcessEnv): string {
  if (scope === 'user') return join(claudeConfigDir(env), 'settings.json');
  const root = locateWorktree(cwd)?.root ?? cwd;
  return join(root, '.claude', scope === 'local' ? 'settings.local.json' : 'settings.json');
}

/** The command Claude Code runs: this atlas's node and bin/claude-hook.cjs, by absolute path. */
export function currentHookCommand(): string {
  const at = currentAtlasLocation();
  return hookCommand(at.node, join(dirname(at.cli), 'claude-hook.cjs'));
}

export interface InstallReport {
  path: string;
  scope: InstallScope;
  action: 'created' | 'installed' | 'unchanged' | 'removed' | 'deleted' | 'not-installed';
  command: string;
}

function readSettings(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AtlasError(`cannot read ${path}: ${(error as Error).message}`, { exitCode: EXIT.input });
  }
}

function edit<T>(path: string, fn: (text: string | undefined) => T): T {
  try {
    return fn(readSettings(path));
  } catch (error) {
    if (error instanceof AtlasError) throw error;
    throw new AtlasError(`${path} is not a settings file atlas can edit: ${(error as Error).message}`, {
      exitCode: EXIT.input,
      hint: 'fix the JSON (Claude Code would not read it either), then run the command again; nothing was changed',
    });
  }
}

function write(path: string, text: string): void {
  const mode = existsSync(path) ? statSync(path).mode & 0o777 : 0o644;
  writeFileAtomic(path, text, { mode });
}

/** Settings files install created, so uninstall can remove them when nothing else is left. */
async function rememberCreated(home: string, path: string, created: boolean): Promise<boolean> {
  const file = claudePaths(home).installs;
  mkdirSync(dirname(file), { recursive: true });
  return withLock(file, () => {
    let list: string[] = [];
    try {
      list = (JSON.parse(readFileSync(file, 'utf8')) as { created?: string[] }).created ?? [];
    } catch {
      list = [];
    }
    const had = list.includes(path);
    const next = created ? [...new Set([...list, path])] : list.filter((p) => p !== path);
    writeFileAtomic(file, `${JSON.stringify({ created: next }, null, 2)}\n`);
    return had;
  });
}

export async function installClaudeHooks(options: {
  scope: InstallScope;
  cwd: string;
  env: NodeJS.ProcessEnv;
  home: string;
  command?: string;
}): Promise<InstallReport> {
  const path = settingsPath(options.scope, options.cwd, options.env);
  const command = options.command ?? currentHookCommand();
  mkdirForPerson(dirname(path));
  return withLock(path, async () => {
    const before = readSettings(path);
    const after = edit(path, (text) => installHooks(text, command));
    if (after === before) return { path, scope: options.scope, action: 'unchanged', command };
    write(path, after);
    if (before === undefined) await rememberCreated(options.home, path, true);
    return { path, scope: options.scope, action: before === undefined ? 'created' : 'installed', command };
  });
}

export async function uninstallClaudeHooks(options: {
  scope: InstallScope;
  cwd: string;
  env: NodeJS.ProcessEnv;
  home: string;
}): Promise<InstallReport> {
  const path = settingsPath(options.scope, options.cwd, options.env);
  const command = currentHookCommand();
  if (!existsSync(path)) return { path, scope: options.scope, action: 'not-installed', command };
  return withLock(path, async () => {
    const before = readSettings(path);
    if (before === undefined) return { path, scope: options.scope, action: 'not-installed', command };
    const { text, emptied } = edit(path, (t) => uninstallHooks(t ?? '{}'));
    if (text === before) return { path, scope: options.scope, action: 'not-installed', command };
    if (emptied && (await rememberCreated(options.home, path, false))) {
      rmSync(path, { force: true });
      return { path, scope: options.scope, action: 'deleted', command };
    }
    write(path, text);
    return { path, scope: options.scope, action: 'removed', command };
  });
}

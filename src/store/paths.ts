// Where atlas keeps things (DESIGN §3). ATLAS_HOME overrides ~/.atlas.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { HOOK_FILE_NAME, HOOK_MARKDOWN_FILE_NAME } from '../domain/hook.js';

export function atlasHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['ATLAS_HOME'];
  return fromEnv && fromEnv.length > 0 ? resolve(fromEnv) : join(homedir(), '.atlas');
}

export function homePaths(home: string = atlasHome()) {
  return {
    home,
    config: join(home, 'config.yaml'),
    cacheDir: join(home, 'cache'),
    keysDir: join(home, 'keys'),
    masterKey: join(home, 'keys', 'master.key'),
    accountXpub: join(home, 'keys', 'account.xpub'),
    taskIndex: join(home, 'keys', 'task-index.json'),
    templatesDir: join(home, 'templates'),
    workspacesDir: join(home, 'workspaces'),
  };
}

/** Where sandboxed servers record their network bridges (exec/sandbox/bridge-record.ts). */
export function sandboxBridgesDir(home: string): string {
  return join(home, 'server', 'sandbox-bridges');
}

export function workspaceDir(workspace: string, home: string = atlasHome()): string {
  return join(home, 'workspaces', workspace);
}

export function taskDir(workspace: string, taskId: string, home: string = atlasHome()): string {
  return join(home, 'workspaces', workspace, 'tasks', taskId);
}

export function taskFiles(dir: string) {
  return {
    dir,
    task: join(dir, 'task.json'),
    hook: join(dir, HOOK_FILE_NAME),
    hookMarkdown: join(dir, HOOK_MARKDOWN_FILE_NAME),
    artifacts: join(dir, 'artifacts'),
    owner: join(dir, 'owner.json'),
    /** Named pipes Claude Code's sandboxed hooks write their events to (read-only in the sandbox). */
    channel: join(dir, 'channel'),
  };
}

// The conversation's copy of its Claude Code session (claude-session.ts) in the store: a tree of
// its own next to the workspace's (`session.<account>.<id>`), pushed after the workspace by each
// turn's OnStreamFinish (fenced by the turn's lease, as the workspace's push is) and pulled after
// the sandbox starts (OnColdStart) or catches up with the store. The user's workspace never holds it. A failure
// here never fails a turn: the next turn then starts a fresh session, as before.
import { existsSync } from 'node:fs';
import type { Config } from '../../config/schema.js';
import type { LifecycleBuiltins } from '../../lifecycle/bus.js';
import type { SyncTarget } from '../../sync/stores/target.js';

/** The session's tree of a conversation, from its folder (lifecycle-adapter.ts sessionSyncTarget). */
export type SessionTargetOf = (dir: string) => SyncTarget;

/** Only the session's own files, whatever sync.exclude says about the person's files. */
function sessionConfig(config: Config): Config {
  return { ...config, sync: { ...config.sync, exclude: [] } };
}

export function sessionTravels(config: Config): boolean {
  return config.sync.store.trim() !== '';
}

/** Pulls the newest stored copy of the session (the store is its authority: forced). Never throws. */
export async function restoreSession(home: string, config: Config, target: SyncTarget, warn: (text: string) => void): Promise<void> {
  if (!sessionTravels(config) || !config.sync.init_from_store) return;
  try {
    const { openStore } = await import('../../sync/stores/open-store.js');
    const { syncPull } = await import('../../sync/operations.js');
    const store = await openStore(config, home);
    await syncPull(target, { store, config: sessionConfig(config), warn }, { force: true });
  } catch (error) {
    warn(`the Claude Code session was not restored from ${config.sync.store}: ${(error as Error).message}`);
  }
}

/** Pushes the conversation's copy of the session, if it has one. Never throws. */
export async function pushSession(
  home: string,
  config: Config,
  target: SyncTarget,
  warn: (text: string) => void,
  beforePublish?: () => Promise<void>,
): Promise<void> {
  if (!sessionTravels(config) || !existsSync(target.root)) return;
  try {
    const { openStore } = await import('../../sync/stores/open-store.js');
    const { syncPush } = await import('../../sync/operations.js');
    const store = await openStore(config, home);
    await syncPush(target, { store, config: sessionConfig(config), warn, ...(beforePublish ? { beforePublish } : {}) }, { force: true });
  } catch (error) {
    warn(`the Claude Code session was not pushed to ${config.sync.store}: ${(error as Error).message}`);
  }
}

/**
 * The lifecycle builtin that pushes the session after the workspace (OnStreamFinish). Its pull is
 * the server's, after OnColdStart or a catch-up with the store, for Claude Code conversations only
 * (src/server/conversations/conversations.ts), so a command agent's turn never waits for it.
 */
export function sessionBuiltins(
  home: string,
  config: Config,
  warn: (text: string) => void,
  targetOf: SessionTargetOf,
  beforePublish?: () => Promise<void>,
): LifecycleBuiltins {
  if (!sessionTravels(config)) return {};
  return { on_stream_finish: (event) => pushSession(home, config, targetOf(event.task_dir), warn, beforePublish) };
}

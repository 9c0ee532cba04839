// The server's lifecycle buses (src/lifecycle/, issue 9): one per conversation turn (and one for a
// delete), so one conversation's slow hook never holds up another's. The builtins are the
// recording defaults (OnMessage records the message, OnStreamFinish the run's ledger row); the
// configuration's `lifecycle.*` commands follow them, each run a line in the conversation
// folder's lifecycle.log. OnColdStart failing throws (the request answers 502); the other points
// log and go on (seed 001 9.2, 9.3).
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { Config } from '../../config/schema.js';
import { conversationFiles as runFiles } from '../../conversation/paths.js';
import { listConversations, readMessages as readRunMessages } from '../../conversation/read.js';
import type { Message } from '../../domain/conversation.js';
import { ProcessGroups } from '../../engine/processes.js';
import { createLifecycleBus } from '../../lifecycle/bus.js';
import { composeBuiltins, recordingBuiltins } from '../../lifecycle/defaults.js';
import type { LifecycleBus, LifecycleEvent } from '../../lifecycle/types.js';
import { syncBuiltins } from '../../sync/lifecycle-builtins.js';
import type { SyncTarget } from '../../sync/stores/target.js';
import type { LogFn } from '../http/context.js';
import { SESSION_FOLDER } from './claude-session.js';
import { sessionBuiltins } from './claude-session-sync.js';

/**
 * The store tree of a conversation's workspace: `conv.<account>.<id>` (an id has no ".", so no two
 * conversations share one), or a hash of the two when that is too long for a store name.
 */
export function conversationTree(account: string, id: string, kind: 'conv' | 'session' = 'conv'): string {
  const name = `${kind}.${account}.${id}`;
  return name.length <= 100 ? name : `${kind}.${createHash('sha256').update(`${account}\0${id}`).digest('hex').slice(0, 40)}`;
}

/**
 * What an event of a conversation syncs: its workspace. The event's task_dir is the server
 * conversation's folder (.../accounts/<account>/conversations/<id>); its conversation_id may be a
 * turn's own recorded run.
 */
export function conversationSyncTarget(event: LifecycleEvent): SyncTarget {
  const account = basename(dirname(dirname(event.task_dir)));
  const tree = conversationTree(account, basename(event.task_dir));
  return { root: event.workspace, tree, workspace: tree };
}

/**
 * Where a conversation's Claude Code session is kept (its folder's `claude-session/`, beside the
 * workspace) and its tree in the store, `session.<account>.<id>`, next to the workspace's
 * (src/server/conversations/claude-session.ts).
 */
export function sessionSyncTarget(dir: string): SyncTarget {
  const tree = conversationTree(basename(dirname(dirname(dir))), basename(dir), 'session');
  return { root: join(dir, SESSION_FOLDER), tree, workspace: tree };
}

/**
 * A new bus for one turn. `beforePublish` fences the turn's OnStreamFinish push: it throws when the
 * turn's lease was taken over, so the version is not published (src/sync/transfer/push.ts).
 */
export function serverLifecycle(home: string, config: Config, log: LogFn): (beforePublish?: () => Promise<void>) => LifecycleBus {
  const warn = (text: string) => log({ msg: 'sync', note: text });
  return (beforePublish) =>
    createLifecycleBus({
      // With sync.store set, OnStreamFinish pushes the workspace and (sync.init_from_store)
      // OnColdStart of a new sandbox restores it, as for tasks (src/sync/lifecycle-builtins.ts);
      // the conversation's Claude Code session follows the same way, after it.
      builtins: composeBuiltins(
        recordingBuiltins(),
        syncBuiltins(home, config, warn, conversationSyncTarget, beforePublish),
        sessionBuiltins(home, config, warn, sessionSyncTarget, beforePublish),
      ),
      config: config.lifecycle,
      groups: new ProcessGroups(),
      reporter: { note: (text) => log({ msg: 'lifecycle', note: text }) },
      logPerPass: true,
    });
}

/** A server conversation's messages, oldest first: each turn's run, in the order they started. */
export function readMessages(dir: string): Message[] {
  return listConversations(dir).flatMap((run) => readRunMessages(runFiles(dir, run.id).messages));
}

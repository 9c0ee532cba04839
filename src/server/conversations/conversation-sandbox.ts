// A conversation's sandbox before its turn: a new workspace runs OnColdStart (a failure removes what
// was created), a warm one catches up with the store, and a Claude Code session follows its workspace.
import { rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { LifecycleBase, LifecycleBus, LifecycleEvent } from '../../lifecycle/types.js';
import type { ServerContext } from '../http/context.js';
import { HttpError } from '../http/http.js';
import { restoreSession } from './claude-session-sync.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, removeConversation, workspaceExists, writeConversation } from './conversation-store.js';
import { conversationSyncTarget, sessionSyncTarget } from './lifecycle-adapter.js';
import { conversationKey } from './turn-slot.js';

/** What a conversation's lifecycle events carry (no task: a conversation's workspace and folder). */
export function lifecycleBase(home: string, c: ServerConversation): LifecycleBase {
  const files = conversationFiles(home, c.account, c.id);
  return { task_id: '', step_name: null, conversation_id: c.id, workspace: files.workspace, task_dir: files.dir };
}

/**
 * A warm sandbox skips OnColdStart, but not the store's word: when the store holds a version
 * pushed after this workspace last synced (the conversation went on on another server), that
 * version is pulled first, so the turn neither runs on stale files nor pushes them as newest.
 */
async function catchUpWithStore(ctx: ServerContext, conversation: ServerConversation): Promise<void> {
  const { home, config } = ctx;
  if (config.sync.store.trim() === '' || !config.sync.init_from_store) return;
  const { restoreWorkspaceOnColdStart } = await import('../../sync/lifecycle.js');
  const target = conversationSyncTarget({ ...lifecycleBase(ctx.home, conversation), point: 'on_cold_start' } as LifecycleEvent);
  try {
    await restoreWorkspaceOnColdStart({ home, config, taskId: '', target, warn: (note) => ctx.log({ msg: 'sync', note }) });
  } catch (error) {
    throw new HttpError(502, 'cold_start_failed', `the sandbox could not catch up with the store: ${(error as Error).message}`, {
      removed: false,
    });
  }
  await restoreConversationSession(ctx, conversation);
}

/** A Claude Code conversation's session follows its workspace from the store. */
export async function restoreConversationSession(ctx: ServerContext, c: ServerConversation): Promise<void> {
  if (c.provider === 'claude')
    await restoreSession(ctx.home, ctx.config, sessionSyncTarget(lifecycleBase(ctx.home, c).task_dir), (note) =>
      ctx.log({ msg: 'sync', note }),
    );
}

/** A new sandbox runs OnColdStart; if it fails, what was created is removed and the request fails. */
export async function ensureSandbox(
  ctx: ServerContext,
  warm: Set<string>,
  conversation: ServerConversation,
  sandboxId: string,
  created: boolean,
  bus: LifecycleBus,
): Promise<ServerConversation> {
  const { home } = ctx;
  const k = conversationKey(conversation.account, conversation.id);
  const files = conversationFiles(home, conversation.account, conversation.id);
  const fresh = !conversation.sandbox_id || !workspaceExists(home, conversation.account, conversation.id);
  if (!fresh && warm.has(k)) {
    await catchUpWithStore(ctx, conversation);
    return conversation;
  }
  if (fresh) {
    await mkdir(files.workspace, { recursive: true });
    conversation = { ...conversation, sandbox_id: sandboxId };
  }
  try {
    await bus.coldStart({ ...lifecycleBase(ctx.home, conversation), point: 'on_cold_start', reason: fresh ? 'new_workspace' : 'resumed' });
  } catch (error) {
    if (fresh) rmSync(files.workspace, { recursive: true, force: true });
    if (created) await removeConversation(await ctx.state(), home, conversation.account, conversation.id);
    ctx.log({
      level: 'error',
      msg: 'cold start failed',
      conversation_id: conversation.id,
      account: conversation.account,
      error: (error as Error).message,
    });
    throw new HttpError(502, 'cold_start_failed', `the sandbox could not be prepared: ${(error as Error).message}`, { removed: fresh });
  }
  await restoreConversationSession(ctx, conversation);
  await writeConversation(await ctx.state(), conversation);
  warm.add(k);
  return conversation;
}

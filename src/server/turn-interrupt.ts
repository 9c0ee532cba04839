// Marking a conversation's cut-off turn interrupted: the same steps whether a server finds its
// owner dead when it reads the conversation (Conversations.detect) or its lease expired in the
// background sweep (lease-sweep.ts). The dead server's agent is stopped if it still runs here, the
// record says `interrupted`, its owner.json goes, and the `interrupted` event tells its clients.
import { rmSync } from 'node:fs';
import type { OwnerRecord } from '../liveness/owner.js';
import { readOwner } from '../liveness/owner.js';
import { killLeftoverProcesses } from '../recovery/leftovers.js';
import type { ServerContext } from './context.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, writeConversation } from './conversation-store.js';
import type { Fence } from './state/types.js';
import { logKey } from './state/types.js';

/**
 * Marks `c` (a turn still recorded `running`) interrupted. `fence`: the lease taken over for it,
 * so only the server that took it over appends the event. Resolves once the event is stored.
 */
export async function markInterrupted(ctx: ServerContext, c: ServerConversation, record: OwnerRecord | undefined, reason: string, fence?: Fence): Promise<ServerConversation> {
  // The dead server's agent may still run (a local turn, or no setpriv): it stops before anyone
  // can recover the turn in the same workspace.
  const killed = killLeftoverProcesses(record);
  if (killed.length > 0) ctx.log({ msg: 'stopped a dead server\'s agent', account: c.account, conversation_id: c.id, process_groups: killed });
  const marked: ServerConversation = { ...c, status: 'interrupted' };
  await writeConversation(await ctx.state(), marked);
  // The dead owner's record goes, unless a server claimed the conversation meanwhile.
  const ownerPath = conversationFiles(ctx.home, c.account, c.id).owner;
  if (record && JSON.stringify(readOwner(ownerPath)) === JSON.stringify(record)) rmSync(ownerPath, { force: true });
  await ctx.logs.get(logKey.conversation(c.account, c.id)).append('interrupted', { turn: c.turns, reason }, fence);
  return marked;
}

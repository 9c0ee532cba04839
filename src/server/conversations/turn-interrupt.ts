// Marking a conversation's cut-off turn interrupted: the same steps whether a server finds its
// owner dead when it reads the conversation (Conversations.detect) or its lease expired in the
// background sweep (lease-sweep.ts). The dead server's agent is stopped if it still runs here, the
// record says `interrupted`, its owner.json goes, and the `interrupted` event tells its clients.
import { rmSync } from 'node:fs';
import { withJournalGroups } from '../../liveness/group-journal.js';
import type { OwnerRecord } from '../../liveness/owner.js';
import { checkLiveness, readOwner } from '../../liveness/owner.js';
import { killLeftoverProcesses } from '../../recovery/leftovers.js';
import type { ServerContext } from '../http/context.js';
import type { Fence } from '../state/types.js';
import { logKey } from '../state/types.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, processGroupsDir, readConversation, writeConversation } from './conversation-store.js';
import { holderOf, THIS_HOLDER } from './turn-lease.js';

export interface CutOff {
  conversation: ServerConversation | undefined;
  /** This call marked it interrupted. */
  marked: boolean;
}

/**
 * The conversation, with its turn marked interrupted when its server died. The lease is taken over
 * first, so of the servers that look at once, one marks it and appends the `interrupted` event
 * (fenced with the new token). `running`: this server runs the turn itself.
 */
export async function interruptIfCut(
  ctx: ServerContext,
  account: string,
  id: string,
  options: { running: boolean; ttlMs: number; onInterrupted?: ((c: ServerConversation) => void) | undefined },
): Promise<CutOff> {
  const state = await ctx.state();
  const c = await readConversation(state, account, id);
  if (c?.status !== 'running' || options.running) return { conversation: c, marked: false };
  const record = readOwner(conversationFiles(ctx.home, account, id).owner);
  const owner = checkLiveness(record);
  if (owner.status === 'alive' || owner.status === 'remote') return { conversation: c, marked: false };
  const leaseName = logKey.conversation(account, id);
  // Its server's process is gone (or silent past the threshold): so is its lease. With no owner
  // on this machine, another server on the state may run it while its lease lasts (the claim fails).
  if (owner.status !== 'none' && record) await state.breakLease(leaseName, holderOf(record));
  const claim = await state.claimLease(leaseName, THIS_HOLDER, options.ttlMs);
  if (!claim.ok) return { conversation: c, marked: false };
  try {
    const now = await readConversation(state, account, id);
    if (now?.status !== 'running') return { conversation: now, marked: false };
    const marked = await markInterrupted(ctx, now, record, owner.status === 'none' ? 'no owner' : owner.reason, {
      lease: leaseName,
      token: claim.token,
    });
    options.onInterrupted?.(marked);
    return { conversation: marked, marked: true };
  } finally {
    await state.releaseLease(leaseName, claim.token);
  }
}

/**
 * A turn of this server whose lease was lost before its end was stored. Whoever holds the lease
 * now marks the turn (a sweep) or runs the next one. But a sweep that found the turn not yet
 * recorded `running` (this server too busy to renew in time) freed the lease: nobody else will
 * mark it, so this server claims the free lease and marks the turn interrupted as a sweep would.
 * Returns the marked conversation, or undefined when it was not this server's to mark.
 */
export async function interruptLostTurn(
  ctx: ServerContext,
  account: string,
  id: string,
  turn: number,
  ttlMs: number,
): Promise<ServerConversation | undefined> {
  const state = await ctx.state();
  const leaseName = logKey.conversation(account, id);
  const claim = await state.claimLease(leaseName, THIS_HOLDER, ttlMs);
  if (!claim.ok) return undefined;
  try {
    const now = await readConversation(state, account, id);
    if (now?.status !== 'running' || now.turns !== turn) return undefined;
    ctx.log({ msg: 'turn interrupted: its lease was lost and left free', account, conversation_id: id, turn });
    return await markInterrupted(ctx, now, undefined, 'its lease was lost', { lease: leaseName, token: claim.token });
  } finally {
    await state.releaseLease(leaseName, claim.token);
  }
}

/**
 * Marks `c` (a turn still recorded `running`) interrupted. `fence`: the lease taken over for it,
 * so only the server that took it over appends the event. Resolves once the event is stored.
 */
async function markInterrupted(
  ctx: ServerContext,
  c: ServerConversation,
  record: OwnerRecord | undefined,
  reason: string,
  fence?: Fence,
): Promise<ServerConversation> {
  // The dead server's agent may still run (a local turn, or no setpriv): it stops before anyone
  // can recover the turn in the same workspace.
  const ownerPath = conversationFiles(ctx.home, c.account, c.id).owner;
  const killed = killLeftoverProcesses(withJournalGroups(processGroupsDir(ctx.home), record, ownerPath));
  if (killed.length > 0)
    ctx.log({ msg: "stopped a dead server's agent", account: c.account, conversation_id: c.id, process_groups: killed });
  // The dead turn's usage never arrived: the totals lack it, and say so.
  const marked: ServerConversation = { ...c, status: 'interrupted', stats: { ...c.stats, partial: true } };
  await writeConversation(await ctx.state(), marked);
  // The dead owner's record goes, unless a server claimed the conversation meanwhile.
  if (record && JSON.stringify(readOwner(ownerPath)) === JSON.stringify(record)) rmSync(ownerPath, { force: true });
  await ctx.logs.get(logKey.conversation(c.account, c.id)).append('interrupted', { turn: c.turns, reason }, fence);
  return marked;
}

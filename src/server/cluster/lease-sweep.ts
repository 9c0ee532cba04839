// The background sweep of every server on the state (issue 23): a server that dies leaves its
// turns' leases to expire (server.lease_ttl). Every server looks, about twice per lease_ttl with
// jitter so replicas do not all ask at once, with one cheap query (expiredLeases). For each expired
// conversation lease, it does what reading the conversation does (Conversations.interruptIfCut):
// takes the lease over (a claim: a new token, so exactly one server acts), marks the turn
// interrupted with the `interrupted` event its clients understand, and gives the lease back. With
// server.auto_recover, the server that marked it recovers the turn as POST .../recover does.
// (Only one server marks a turn: it holds the lease while it does.)

import type { ServerConversation } from '../conversations/conversation-store.js';
import type { Conversations } from '../conversations/conversations.js';
import { THIS_HOLDER } from '../conversations/turn-lease.js';
import type { ServerContext } from '../http/context.js';
import type { LeaseRow } from '../state/types.js';
import { parseLogKey } from '../state/types.js';

/** The pause before the next look: half the lease's life, ± 25 %. */
export function sweepDelay(ttlMs: number, random = Math.random): number {
  return Math.round((ttlMs / 2) * (0.75 + random() * 0.5));
}

export class LeaseSweep {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private pass: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: ServerContext,
    private readonly conversations: Conversations,
  ) {}

  start(): void {
    this.schedule();
  }

  /** No further passes; resolves once a pass under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.pass;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.pass = this.sweep().catch((error: Error) => this.ctx.log({ level: 'warn', msg: 'lease sweep failed', error: error.message }));
      void this.pass.then(() => this.schedule());
    }, sweepDelay(this.ctx.config.server.lease_ttl));
    this.timer.unref();
  }

  /** One pass: every expired conversation lease is taken over and its turn marked interrupted. */
  async sweep(): Promise<void> {
    const state = await this.ctx.state();
    for (const lease of await state.expiredLeases()) {
      if (this.stopped || this.ctx.stopping) return;
      const conversation = parseLogKey(lease.name);
      // This server's own turn renews its lease itself (or finds it lost and stops).
      if (conversation?.kind !== 'conversation' || this.conversations.isRunning(conversation.account, conversation.id)) continue;
      await this.takeOver(lease, conversation.account, conversation.id).catch((error: Error) =>
        this.ctx.log({ level: 'error', msg: 'expired lease not taken over', lease: lease.name, error: error.message }),
      );
    }
  }

  /** The path a read takes (Conversations.interruptIfCut): the lease taken over, the turn marked. */
  private async takeOver(expired: LeaseRow, account: string, id: string): Promise<void> {
    const { conversation, marked } = await this.conversations.interruptIfCut(account, id);
    if (marked) {
      this.ctx.log({
        msg: "turn interrupted: its server's lease expired",
        account,
        conversation_id: id,
        turn: conversation?.turns,
        holder: expired.holder,
      });
    } else if (conversation?.status !== 'running') {
      // Its server died before the turn was recorded running (or the conversation is gone): the
      // lease is freed (claimed, then given back), so later passes do not find it again. A turn
      // started meanwhile holds a fresh lease: the claim fails, and nothing is touched.
      const state = await this.ctx.state();
      const claim = await state.claimLease(expired.name, THIS_HOLDER, this.ctx.config.server.lease_ttl);
      if (claim.ok) await state.releaseLease(expired.name, claim.token);
    }
  }

  /**
   * With server.auto_recover, a turn this server marked interrupted (in a sweep, or reading it) is
   * recovered at once, from the last pushed version, as POST .../recover does.
   */
  autoRecover(c: ServerConversation): void {
    if (!this.ctx.config.server.auto_recover || this.stopped || this.ctx.stopping) return;
    this.ctx.log({ msg: 'recovering an interrupted turn', account: c.account, conversation_id: c.id });
    this.conversations
      .recover(c.account, c.id)
      .then((started) => started.done)
      .catch((error: Error) => this.ctx.log({ level: 'error', msg: 'recover failed', conversation_id: c.id, error: error.message }));
  }
}

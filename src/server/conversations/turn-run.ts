// Runs one turn of a conversation once it holds its slot and lease: the agent in its executor, a
// heartbeat on owner.json, events fenced by the lease's token, then the end (record, `cancelled`,
// `usage`, lease given back) in one transaction, or, with the lease lost, the turn marked interrupted.
import type { OwnerRecord, ProcessGroupRecord } from '../../liveness/owner.js';
import { startHeartbeat } from '../../liveness/owner.js';
import type { ServerContext } from '../http/context.js';
import type { EventLog } from '../state/event-log.js';
import type { StoredMessage } from '../state/types.js';
import { runTurn } from './agent-turn.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, readConversation } from './conversation-store.js';
import { paced } from './pace.js';
import { lowerPriority } from './priority.js';
import { createTurnExecutor } from './turn-executor.js';
import { interruptLostTurn } from './turn-interrupt.js';
import type { Running } from './turn-slot.js';
import { CANCEL_REASON, ownerLeaseSettings, turnLeaseSettings } from './turn-slot.js';

/** What the conversations are told as the turn ends. */
export interface TurnHooks {
  /** A new process group of the agent: its live groups are recorded (the server's journal, named by owner.json). */
  processGroups: (groups: readonly ProcessGroupRecord[]) => void;
  /** The agent has stopped: the conversation is free here. */
  ended: () => void;
  /** This server marked the turn interrupted (its lease was lost). */
  interrupted: (c: ServerConversation) => void;
}

export async function runConversationTurn(
  ctx: ServerContext,
  conversation: ServerConversation,
  prompt: string,
  slot: Running,
  log: EventLog,
  owner: OwnerRecord,
  hooks: TurnHooks,
): Promise<void> {
  const { home, config } = ctx;
  const files = conversationFiles(home, conversation.account, conversation.id);
  // The caller opens the stream first: its headers reach the client before this work starts.
  // ... and one turn starts per pass of the event loop (src/server/conversations/pace.ts).
  await paced();
  const heartbeat = startHeartbeat(files.owner, ownerLeaseSettings(config), owner, {
    background: true,
    groups: hooks.processGroups,
  });
  // The turn's events carry its lease's token: once another server has taken the lease over,
  // they are refused, and the turn is stopped.
  const fence = slot.lease?.fence;
  const fenced = {
    append: (type: string, data: Record<string, unknown>) => log.append(type, data, fence),
    start: (record: ServerConversation, events: { type: string; data: Record<string, unknown> }[]) => log.startTurn(record, events, fence),
  };
  let lost = false;
  slot.lease?.onLost(() => {
    lost = true;
    slot.stopReason = 'lease lost';
    slot.groups.terminateAll();
  });
  slot.groups.onChange = (pids) => {
    heartbeat.setProcessGroups(pids);
    lowerPriority(pids);
    // Cancelled before its agent had started: it stops as soon as it starts.
    if (slot.stopReason && pids.length > 0) slot.groups.terminateAll();
  };
  const started = Date.now();
  let final: Record<string, unknown>;
  let record: ServerConversation | undefined;
  let messages: StoredMessage[] = [];
  try {
    const execution = await createTurnExecutor({
      home,
      config,
      account: conversation.account,
      id: conversation.id,
      local: ctx.local,
      spawner: await ctx.spawner,
    });
    let outcome: Awaited<ReturnType<typeof runTurn>>;
    try {
      const onStoreError = (error: Error) =>
        ctx.log({ level: 'error', msg: 'message not stored', conversation_id: conversation.id, error: error.message });
      const onSessionNote = (note: string) => ctx.log({ msg: 'claude session', conversation_id: conversation.id, note });
      outcome = await runTurn({
        home,
        config,
        state: await ctx.state(),
        onStoreError,
        onSessionNote,
        holdsLease: () => !lost,
        conversation,
        prompt,
        log: fenced,
        bus: slot.bus,
        groups: slot.groups,
        executor: execution.executor,
        stopReason: () => slot.stopReason,
      });
    } finally {
      await execution.release();
    }
    ctx.log({
      msg: 'turn finished',
      account: conversation.account,
      conversation_id: conversation.id,
      turn: outcome.conversation.turns,
      ok: outcome.ok,
      interrupted: outcome.interrupted,
      duration_ms: Date.now() - started,
    });
    record = outcome.conversation;
    messages = outcome.messages;
    final = {
      turn: outcome.conversation.turns,
      ok: outcome.ok,
      error: outcome.error,
      usage: outcome.usage,
      conversation: outcome.conversation.stats,
      session_id: outcome.conversation.session_id || null,
    };
  } catch (error) {
    ctx.log({ level: 'error', msg: 'turn crashed', conversation_id: conversation.id, error: (error as Error).message });
    const latest = await ctx
      .state()
      .then((state) => readConversation(state, conversation.account, conversation.id))
      .catch(() => undefined);
    final = { ok: false, error: (error as Error).message, usage: null, conversation: latest?.stats ?? null };
  } finally {
    // owner.json goes before the conversation is free here (a next turn's claim must not race its
    // removal), and before the end is stored (a client that sends its next prompt on `usage`, to any
    // server, finds no owner); off the event loop.
    await heartbeat.release();
    hooks.ended();
    slot.release();
  }
  // The final record, its messages, `cancelled` and `usage`, and the lease given back, in one transaction: a
  // server that dies before it leaves the turn running (then interrupted once its lease expires),
  // never a finished record without its usage event. A client that sends its next prompt on
  // `usage`, to this server or another, finds the conversation free.
  const events = [
    ...(slot.stopReason === CANCEL_REASON ? [{ type: 'cancelled', data: { turn: final['turn'] ?? null } }] : []),
    { type: 'usage', data: final },
  ];
  if (!slot.lease) return;
  // Renewed until the end is stored (queued appends may take a while), which gives it back.
  const ended = !lost && (await log.finishTurn(record, events, slot.lease.fence, messages)) !== undefined;
  slot.lease.stop();
  if (ended) return;
  // Lease lost (or end not stored): nothing more from here; clients here wait for `interrupted`,
  // written by the lease's holder, or by this server if it was left free (turn-interrupt.ts).
  if (lost)
    ctx.log({
      level: 'error',
      msg: 'turn stopped: its lease was taken over',
      account: conversation.account,
      conversation_id: conversation.id,
    });
  log.followOthers();
  const marked = await interruptLostTurn(
    ctx,
    conversation.account,
    conversation.id,
    conversation.turns + 1,
    turnLeaseSettings(config).ttlMs,
  ).catch(() => undefined);
  if (marked) hooks.interrupted(marked);
}

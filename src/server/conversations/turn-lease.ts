// A turn's lease in the server state, beside its owner.json: owner.json tells the servers of one
// machine at once when a turn's server died (its process is gone); the lease tells every server on
// the state whether a turn runs anywhere, until it expires (server.lease_ttl) without a renewal.
// Its token grows on every claim, and the turn's events are appended fenced with it: a server that
// lost its lease (stalled past the expiry, and another took over) publishes nothing more.
import { hostname } from 'node:os';
import type { OwnerRecord } from '../../liveness/owner.js';
import { processStartIdentity } from '../../liveness/process-identity.js';
import type { LogFn } from '../http/context.js';
import type { Fence, ServerState } from '../state/types.js';
import { LeaseLostError } from '../state/types.js';

export interface HeldLease {
  fence: Fence;
  /** Called once if a renewal finds the lease taken (or the state says it is no longer ours). */
  onLost(fn: () => void): void;
  /** Stops renewing it: the turn's end gave it back in its own transaction, or another holder has it. */
  stop(): void;
  /** Stops renewing it and gives it back. */
  release(): Promise<void>;
}

/** The holder name of a process: the same fields owner.json records, so a dead owner's lease can be freed. */
export function holderOf(owner: Pick<OwnerRecord, 'host' | 'pid' | 'process_start'>): string {
  return `${owner.host}:${owner.pid}:${owner.process_start}`;
}

export const THIS_HOLDER = holderOf({ host: hostname(), pid: process.pid, process_start: processStartIdentity(process.pid) ?? 'unknown' });

export async function claimTurnLease(
  state: ServerState,
  name: string,
  settings: { ttlMs: number; renewMs: number },
  log: LogFn,
): Promise<{ ok: true; lease: HeldLease } | { ok: false; holder: string }> {
  const claim = await state.claimLease(name, THIS_HOLDER, settings.ttlMs);
  if (!claim.ok) return { ok: false, holder: claim.holder.holder };
  const fence: Fence = { lease: name, token: claim.token };
  const lost: (() => void)[] = [];
  let done = false;
  // Until when the lease is ours for certain: past it without a renewal (the state does not
  // answer), another server may take the turn over, so this one stops its agent (issue 37: two
  // agents on one conversation).
  let expiresAt = Date.now() + settings.ttlMs;
  const lose = (why: string) => {
    done = true;
    clearInterval(timer);
    log({ level: 'error', msg: 'lease lost', lease: name, token: claim.token, why });
    for (const fn of lost.splice(0)) fn();
  };
  const timer = setInterval(() => {
    const asked = Date.now();
    state.renewLease(name, THIS_HOLDER, claim.token, settings.ttlMs).then(
      (ok) => {
        if (done) return;
        if (ok) expiresAt = asked + settings.ttlMs;
        else lose('taken over');
      },
      (error: Error) => {
        if (done) return;
        log({ level: 'error', msg: 'lease not renewed', lease: name, error: error.message });
        // The state does not answer: the next beat tries again, until the lease would expire.
        if (Date.now() >= expiresAt) lose('not renewed before it expired');
      },
    );
  }, settings.renewMs);
  timer.unref();
  const stop = () => {
    done = true;
    clearInterval(timer);
  };
  return {
    ok: true,
    lease: {
      fence,
      onLost: (fn) => lost.push(fn),
      stop,
      release: async () => {
        stop();
        await state
          .releaseLease(name, claim.token)
          .catch((error: Error) => log({ level: 'error', msg: 'lease not released', lease: name, error: error.message }));
      },
    },
  };
}

/**
 * Right before a turn publishes outside the database (its workspace's version in the store): the
 * database, the authority on leases, must still give the lease the turn's token. Otherwise another
 * server has taken the turn over: logged, and thrown (LeaseLostError), so nothing is published.
 */
export async function requireFence(state: ServerState, fence: Fence, log: LogFn): Promise<void> {
  const current = await state.getLease(fence.lease);
  if (current?.token === fence.token) return;
  log({
    level: 'error',
    msg: "push refused: the turn's lease was taken over",
    lease: fence.lease,
    token: fence.token,
    current_token: current?.token ?? null,
  });
  throw new LeaseLostError(fence.lease, fence.token);
}

// A conversation's turn as this server runs it: its slot (process groups, lifecycle bus, running-work
// slot, lease) and how long its leases last.
import type { Config } from '../../config/schema.js';
import type { ProcessGroups } from '../../exec/process-groups.js';
import type { LifecycleBus } from '../../lifecycle/types.js';
import type { HeldLease } from './turn-lease.js';

export interface Running {
  groups: ProcessGroups;
  bus: LifecycleBus;
  stopReason: string | undefined;
  done: Promise<void>;
  /** Gives back the account's running-work slot (server.max_running_per_account). */
  release: () => void;
  /** Past the account's queue: a queued turn is not running (atlas_running, /ready). */
  admitted?: boolean;
  /** The turn's lease in the server state (every server on it sees the turn running). */
  lease?: HeldLease;
}

/** The stop reason of a turn cancelled over the API: it ends `cancelled`, not `interrupted`. */
export const CANCEL_REASON = 'cancelled over the API';

export const conversationKey = (account: string, id: string) => `${account}/${id}`;

/** The turn's lease in the server state: its time to live and how often it is renewed. */
export function turnLeaseSettings(config: Config) {
  const ttlMs = config.server.lease_ttl;
  return { ttlMs, renewMs: Math.min(config.hooks.heartbeat_interval, Math.floor(ttlMs / 3)) };
}

/** The owner.json lease of the conversation's folder. */
export function ownerLeaseSettings(config: Config) {
  return { heartbeatIntervalMs: config.hooks.heartbeat_interval, staleThresholdMs: config.hooks.stale_threshold };
}

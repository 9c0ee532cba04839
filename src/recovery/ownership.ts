// Recovery owns the task while it works on it: owner.json names this process and beats, so a
// second `atlas recover` (or `atlas status`) sees a live owner, not a crash. Before the runner is
// called the heartbeat hands over: the timer stops but the file stays (the runner, in this same
// process, rewrites it with its own heartbeat), so there is never a moment when the task looks
// ownerless.
import type { OwnerRecord } from '../liveness/owner.js';
import { startHeartbeat } from '../liveness/owner.js';

export interface HeartbeatSettings {
  heartbeatIntervalMs: number;
  staleThresholdMs: number;
}

export interface Ownership {
  readonly owner: OwnerRecord;
  /** Stop beating but keep owner.json: the runner in this process takes over the file. */
  handOver(): void;
  /** Stop beating and remove owner.json if it still names this process. */
  release(): void;
}

export function takeOwnership(path: string, settings: HeartbeatSettings): Ownership {
  const heartbeat = startHeartbeat(path, settings);
  return { owner: heartbeat.owner, handOver: () => heartbeat.handOver(), release: () => heartbeat.stop() };
}

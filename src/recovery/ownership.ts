// Recovery owns the task while it works on it: owner.json names this process and beats, so a
// second `atlas recover` (or `atlas status`) sees a live owner, not a crash. Before the runner is
// called the timer stops but the file stays (the runner, in this same process, rewrites it with
// its own heartbeat), so there is never a moment when the task looks ownerless.
import type { OwnerRecord } from '../liveness/owner.js';
import { ownerRecordForThisProcess, readOwner, removeOwner, writeOwner } from '../liveness/owner.js';
import { toTimestamp } from '../domain/time.js';

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
  const owner = ownerRecordForThisProcess(settings);
  writeOwner(path, owner);
  let timer: NodeJS.Timeout | undefined = setInterval(() => {
    owner.heartbeat_at = toTimestamp(new Date());
    try {
      writeOwner(path, owner);
    } catch {
      // A missed beat is survivable; the next one retries.
    }
  }, Math.max(250, settings.heartbeatIntervalMs));
  timer.unref();
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return {
    owner,
    handOver: stop,
    release() {
      stop();
      const current = readOwner(path);
      if (current && current.pid === owner.pid && current.process_start === owner.process_start && current.host === owner.host) removeOwner(path);
    },
  };
}

// owner.json: which process runs a task, and its heartbeat (DESIGN §6). Written only by the owner,
// atomically; read by anyone deciding whether the task crashed.

import { readFile, readFileSync, unlink, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { toTimestamp } from '../domain/time.js';
import { writeFileAtomic } from '../store/atomic-write.js';
import { BackgroundFile, fsCall } from '../store/atomic-write-async.js';
import { toJson } from '../store/json-file.js';
import { isPidRunning, processStartIdentity } from './process-identity.js';

export interface OwnerRecord {
  pid: number;
  host: string;
  /** processStartIdentity() of the owner when it claimed the task. */
  process_start: string;
  started_at: string;
  heartbeat_at: string;
  /** The owner's own settings, so readers judge staleness without loading configuration. */
  heartbeat_interval_ms: number;
  stale_threshold_ms: number;
  /**
   * Process groups the owner's step started and that still run (leader pid and its start
   * identity). Children live in groups of their own, so a SIGKILL of the owner leaves them
   * running: recovery stops them before it runs the step again.
   */
  process_groups?: ProcessGroupRecord[];
  /**
   * Where the owner records its process groups instead (a server: one file per server process,
   * liveness/group-journal.ts), by name in that folder; its lines for this record are added to
   * `process_groups` when the task is taken over.
   */
  process_groups_file?: string;
}

export interface ProcessGroupRecord {
  pid: number;
  process_start: string;
}

export type Liveness =
  | { status: 'alive'; owner: OwnerRecord }
  /** The owning process is gone (or its pid now belongs to another process). */
  | { status: 'gone'; owner: OwnerRecord; reason: string }
  /** The owner may exist but has not beaten for longer than its stale threshold. */
  | { status: 'stale'; owner: OwnerRecord; reason: string }
  /** Owned from another host: only the heartbeat can tell. */
  | { status: 'remote'; owner: OwnerRecord }
  | { status: 'none' };

export function readOwner(path: string): OwnerRecord | undefined {
  try {
    return parseOwner(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function parseOwner(text: string): OwnerRecord | undefined {
  try {
    const data = JSON.parse(text) as OwnerRecord;
    return typeof data.pid === 'number' && typeof data.heartbeat_at === 'string' ? data : undefined;
  } catch {
    return undefined;
  }
}

export function ownerRecordForThisProcess(
  settings: { heartbeatIntervalMs: number; staleThresholdMs: number },
  now = new Date(),
): OwnerRecord {
  return {
    pid: process.pid,
    host: hostname(),
    process_start: processStartIdentity(process.pid) ?? 'unknown',
    started_at: toTimestamp(now),
    heartbeat_at: toTimestamp(now),
    heartbeat_interval_ms: settings.heartbeatIntervalMs,
    stale_threshold_ms: settings.staleThresholdMs,
  };
}

export function writeOwner(path: string, owner: OwnerRecord): void {
  // Atomic but not fsynced: the record proves a live process, and after a machine crash no process
  // is alive anyway (a missing record reads as "no owner"). An fsync per beat and per process
  // group held a busy server's event loop for seconds.
  writeFileAtomic(path, toJson(owner), { durable: false });
}

export function removeOwner(path: string): void {
  // unlink, not rmSync: for one file rmSync walks Node's rimraf (an lstat and retries) on every turn.
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Removes owner.json if this process holds it (a claim given back before any work started). */
export function releaseOwner(path: string): void {
  const current = readOwner(path);
  if (current && current.pid === process.pid && current.host === hostname()) removeOwner(path);
}

/** Is the recorded owner still running this task? */

export function checkLiveness(owner: OwnerRecord | undefined, now = Date.now()): Liveness {
  if (!owner) return { status: 'none' };
  const age = now - Date.parse(owner.heartbeat_at);
  const stale = age > owner.stale_threshold_ms;
  if (owner.host !== hostname()) {
    return stale
      ? { status: 'stale', owner, reason: `no heartbeat from ${owner.host} for ${Math.round(age / 1000)}s` }
      : { status: 'remote', owner };
  }
  if (!isPidRunning(owner.pid)) return { status: 'gone', owner, reason: `process ${owner.pid} is no longer running` };
  const identity = processStartIdentity(owner.pid);
  if (identity !== undefined && owner.process_start !== 'unknown' && identity !== owner.process_start) {
    return { status: 'gone', owner, reason: `pid ${owner.pid} now belongs to another process` };
  }
  if (stale)
    return {
      status: 'stale',
      owner,
      reason: `no heartbeat for ${Math.round(age / 1000)}s (threshold ${Math.round(owner.stale_threshold_ms / 1000)}s)`,
    };
  return { status: 'alive', owner };
}

export interface Heartbeat {
  owner: OwnerRecord;
  /** Records the step's live process groups (pids of their leaders) at once. */
  setProcessGroups(pids: readonly number[]): void;
  /** Stops beating but keeps owner.json, for another owner in this same process to take over. */
  handOver(): void;
  /** Stops beating and removes owner.json, unless another process has taken the task over (not for a `background` heartbeat: release()). */
  stop(): void;
  /**
   * stop(), with the read and the removal off the event loop (a busy server's unlink waits on the
   * file system's journal while other writes commit). Nothing may claim the record in this
   * process until it has settled.
   */
  release(): Promise<void>;
}

/**
 * Claims the task for this process and beats until stopped. The timer never keeps node alive.
 * `claimed`: the record this process has just written (claimOwner), which is not written again.
 * `background`: each later write (beats, process groups) is made by libuv's thread pool, the same
 * write-then-rename, so a server's one thread never waits on the disk for it; such a heartbeat
 * ends with release(), which waits for them.
 */
export function startHeartbeat(
  path: string,
  settings: { heartbeatIntervalMs: number; staleThresholdMs: number },
  claimed?: OwnerRecord,
  options: {
    background?: boolean;
    /** Records the live groups when a new one starts, instead of owner.json (which names where: `process_groups_file`). */
    groups?: (groups: readonly ProcessGroupRecord[]) => void;
  } = {},
): Heartbeat {
  const owner = claimed ?? ownerRecordForThisProcess(settings);
  if (!claimed) writeOwner(path, owner);
  let stopped = false;
  const identities = new Map<number, string>();
  const file = options.background ? new BackgroundFile(path) : undefined;
  const beat = () => {
    if (stopped) return;
    owner.heartbeat_at = toTimestamp(new Date());
    if (file) return file.save(toJson(owner), false);
    try {
      writeOwner(path, owner);
    } catch {
      // A missed beat is survivable; the next one retries.
    }
  };
  const timer = setInterval(beat, Math.max(250, settings.heartbeatIntervalMs));
  timer.unref();
  // Gone, or still this process's own record (not one another process wrote since).
  const ours = (current: OwnerRecord | undefined) =>
    !current || (current.pid === owner.pid && current.host === owner.host && current.process_start === owner.process_start);
  return {
    owner,
    setProcessGroups(pids) {
      if (stopped) return;
      let added = false;
      for (const pid of pids) {
        if (identities.has(pid)) continue;
        identities.set(pid, processStartIdentity(pid) ?? 'unknown');
        added = true;
      }
      for (const pid of [...identities.keys()]) if (!pids.includes(pid)) identities.delete(pid);
      if (pids.length > 0) owner.process_groups = pids.map((pid) => ({ pid, process_start: identities.get(pid)! }));
      else delete owner.process_groups;
      // A new group is on record before anything else happens; one that ended goes with the next
      // beat (or stop()): a recorded group that is gone is never signalled (leftovers.ts checks
      // its start identity), and a busy server saves a write per process.
      if (!added) return;
      if (options.groups) options.groups(owner.process_groups ?? []);
      else beat();
    },
    handOver() {
      stopped = true;
      clearInterval(timer);
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      if (ours(readOwner(path))) removeOwner(path);
    },
    async release() {
      stopped = true;
      clearInterval(timer);
      // A write still on its way would put the record back after its removal.
      await file?.flushed().catch(() => undefined);
      const current = await fsCall<string>((done) => readFile(path, 'utf8', done)).then(parseOwner, () => undefined);
      if (ours(current))
        await fsCall((done) => unlink(path, (error) => done(error, undefined))).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
    },
  };
}

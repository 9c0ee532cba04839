// Processes a crashed run left behind. A step's commands and agent run in process groups of their
// own (so Ctrl+C can stop them whole), which also means a SIGKILL of atlas leaves them running:
// an agent would keep editing the working tree while recovery runs the step again. The owner
// recorded its live groups in owner.json; recovery stops those that are still the same processes
// (same start identity: a reused pid is never signalled).
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { OwnerRecord } from '../liveness/owner.js';
import { isPidRunning, processStartIdentity } from '../liveness/process-identity.js';

const GRACE_MS = 2000;

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // Already gone.
  }
}

/** An exited process not yet reaped by its new parent (Linux): it holds its pid, runs nothing. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) === 'Z';
  } catch {
    return false;
  }
}

/** The leader is the process the owner recorded (a zombie leader still holds the pid, so it counts). */
function sameProcess(pid: number, start: string): boolean {
  if (!isPidRunning(pid)) return false;
  const identity = processStartIdentity(pid);
  return identity !== undefined && start !== 'unknown' && identity === start;
}

/** Some member of the group may still be working. */
function groupRunning(pid: number): boolean {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, 0);
  } catch {
    return false;
  }
  return !isZombie(pid);
}

/**
 * Stops (SIGTERM, then SIGKILL after a grace period) the process groups a dead owner on this host
 * left running. Returns the leader pids that were still running.
 */
export async function stopLeftoverProcesses(owner: OwnerRecord | undefined, graceMs = GRACE_MS): Promise<number[]> {
  if (!owner?.process_groups?.length || owner.host !== hostname()) return [];
  const live = owner.process_groups.filter((g) => g.pid !== process.pid && sameProcess(g.pid, g.process_start) && groupRunning(g.pid));
  if (live.length === 0) return [];
  for (const g of live) signalGroup(g.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && live.some((g) => groupRunning(g.pid))) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  for (const g of live) if (groupRunning(g.pid)) signalGroup(g.pid, 'SIGKILL');
  return live.map((g) => g.pid);
}

/**
 * SIGKILLs at once the process groups a dead owner on this host left running: for a server, whose
 * cut-off turn must never run beside its recovery (no grace: the owner is gone, nothing waits).
 */
export function killLeftoverProcesses(owner: OwnerRecord | undefined): number[] {
  if (!owner?.process_groups?.length || owner.host !== hostname()) return [];
  const live = owner.process_groups.filter((g) => g.pid !== process.pid && sameProcess(g.pid, g.process_start) && groupRunning(g.pid));
  for (const g of live) signalGroup(g.pid, 'SIGKILL');
  return live.map((g) => g.pid);
}

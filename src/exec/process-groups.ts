// Child processes of a step, each in its own process group, so that stopping a step (Ctrl+C,
// timeout, or its end) stops everything it started: no orphans keep editing the working tree.
const KILL_GRACE_MS = 2000;
const GROUPS = process.platform !== 'win32';

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(GROUPS ? -pid : pid, signal);
  } catch {
    // Already gone.
  }
}

/** The process groups a task run has started and not yet seen end. */
export class ProcessGroups {
  /** pid → pending SIGKILL timer, if the group was asked to stop. */
  private readonly live = new Map<number, NodeJS.Timeout | undefined>();

  /** Told the live groups whenever one starts or ends (the runner records them in owner.json). */
  onChange: ((pids: number[]) => void) | undefined;

  add(pid: number): void {
    this.live.set(pid, undefined);
    this.onChange?.([...this.live.keys()]);
  }

  /** The group has ended: forget it (and any SIGKILL still pending for it). */
  delete(pid: number): void {
    if (!this.live.has(pid)) return;
    const timer = this.live.get(pid);
    if (timer) clearTimeout(timer);
    this.live.delete(pid);
    this.onChange?.([...this.live.keys()]);
  }

  get size(): number {
    return this.live.size;
  }

  /** SIGTERM to the group, then SIGKILL if it has not ended after a grace period. */
  terminate(pid: number, graceMs = KILL_GRACE_MS): void {
    if (!this.live.has(pid)) return;
    signalGroup(pid, 'SIGTERM');
    if (this.live.get(pid)) return;
    const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
    timer.unref();
    this.live.set(pid, timer);
  }

  terminateAll(graceMs = KILL_GRACE_MS): void {
    for (const pid of [...this.live.keys()]) this.terminate(pid, graceMs);
  }

  killAll(): void {
    for (const pid of this.live.keys()) signalGroup(pid, 'SIGKILL');
  }
}

// Agents run at a lower CPU priority than the server: under load (hundreds of agents starting at
// once on a few cores) the server still answers, streams and accepts at once, and the agents share
// what is left. Each process group is lowered once.
import { getPriority, setPriority } from 'node:os';

const AGENT_NICENESS = 10;
const lowered = new Set<number>();

export function lowerPriority(pids: readonly number[]): void {
  for (const pid of pids) {
    if (lowered.has(pid)) continue;
    lowered.add(pid);
    try {
      setPriority(pid, Math.min(19, getPriority(0) + AGENT_NICENESS));
    } catch {
      // Gone already, or not ours to change: it runs at the server's priority.
    }
  }
  // Only live pids are kept (the set would otherwise grow with every turn).
  if (lowered.size > 4096) for (const pid of lowered) if (!pids.includes(pid)) lowered.delete(pid);
}

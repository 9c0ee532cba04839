// Agents run at a lower CPU priority than the server: under load (hundreds of agents starting at
// once on a few cores) the server still answers, streams and accepts at once, and the agents share
// what is left. Called when a turn's process groups change (a syscall per live group). Where the
// kernel's autogroups are on, each agent's session is a scheduling group of its own and its
// niceness weighs only inside it (docs/server.md#performance).
import { getPriority, setPriority } from 'node:os';

const AGENT_NICENESS = 10;

export function lowerPriority(pids: readonly number[]): void {
  const target = Math.min(19, getPriority(0) + AGENT_NICENESS);
  for (const pid of pids) {
    try {
      if (getPriority(pid) < target) setPriority(pid, target);
    } catch {
      // Gone already, or not ours to change: it runs at the server's priority.
    }
  }
}

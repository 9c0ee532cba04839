// The socat processes that bridge a sandbox's network namespace to atlas's proxy (Linux). They
// are started by the sandbox library with this process as parent; a SIGKILL of atlas leaves them
// running, serving a socket nobody uses. They are found by the socket path they listen on.
import { lstatSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { basename } from 'node:path';

function commandLine(pid: string): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/** Pids of socat processes listening on one of `sockets` (none where /proc is missing). */
export function findBridgeProcesses(sockets: readonly string[]): number[] {
  if (sockets.length === 0) return [];
  const wanted = new Set(sockets);
  return findBridgeProcessesWhere((socket) => wanted.has(socket));
}

/** Pids of socat processes listening on a Unix socket for which `listensOn` is true. */
export function findBridgeProcessesWhere(listensOn: (socket: string) => boolean): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const pid of entries) {
    const argv = commandLine(pid);
    if (!argv || basename(argv[0] ?? '') !== 'socat') continue;
    const listen = argv.map((a) => a.split(',')[0]!).find((a) => a.startsWith('UNIX-LISTEN:'));
    if (listen !== undefined && listensOn(listen.slice('UNIX-LISTEN:'.length))) found.push(Number(pid));
  }
  return found;
}

/** What stopping bridges did (or, in a dry run, would do). */
export interface BridgeSweep {
  /** socat processes stopped. */
  processes: number[];
  /** Their sockets removed (a socat that ends on SIGTERM may have removed its own first). */
  sockets: string[];
}

/**
 * Stops the socat processes listening on `sockets` and removes those that are still sockets
 * (`dryRun`: only says which): what a dead run's or a dead server's bridges leave.
 */
export function stopBridges(sockets: readonly string[], dryRun = false): BridgeSweep {
  const sweep: BridgeSweep = { processes: [], sockets: [] };
  for (const pid of findBridgeProcesses(sockets)) {
    try {
      if (!dryRun) process.kill(pid, 'SIGTERM');
      sweep.processes.push(pid);
    } catch {
      // Ended meanwhile, or not ours to stop.
    }
  }
  for (const socket of sockets) {
    try {
      if (!lstatSync(socket).isSocket()) continue;
      if (!dryRun) unlinkSync(socket);
      sweep.sockets.push(socket);
    } catch {
      // Gone already.
    }
  }
  return sweep;
}

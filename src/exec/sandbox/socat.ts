// The socat processes that bridge a sandbox's network namespace to atlas's proxy (Linux). They
// are started by the sandbox library with this process as parent; a SIGKILL of atlas leaves them
// running, serving a socket nobody uses. They are found by the socket path they listen on.
import { readdirSync, readFileSync } from 'node:fs';
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
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [];
  }
  const listens = new Set(sockets.map((s) => `UNIX-LISTEN:${s}`));
  const found: number[] = [];
  for (const pid of entries) {
    const argv = commandLine(pid);
    if (!argv || basename(argv[0] ?? '') !== 'socat') continue;
    if (argv.some((a) => listens.has(a.split(',')[0]!))) found.push(Number(pid));
  }
  return found;
}

// Identifies a process beyond its pid: pids are reused, so an owner record also keeps the
// process's start time and the boot it belongs to. A live pid with another start time is not
// the owner.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let bootId: string | undefined | null = null;

function currentBootId(): string | undefined {
  if (bootId === null) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = undefined;
    }
  }
  return bootId;
}

let own: string | undefined | null = null;

/** An opaque, stable identity of the process's start, or undefined if it is not running. */
export function processStartIdentity(pid: number): string | undefined {
  // This process's own never changes: read once, not at every claim of a server's turn.
  if (pid === process.pid) {
    if (own === null) own = readStartIdentity(pid);
    return own;
  }
  return readStartIdentity(pid);
}

function readStartIdentity(pid: number): string | undefined {
  try {
    // /proc/<pid>/stat: field 22 is the start time in clock ticks since boot. The command name
    // (field 2) may contain spaces and parentheses, so split after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = fields[19];
    return ticks ? `linux:${currentBootId() ?? 'boot'}:${ticks}` : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && process.platform === 'linux') return undefined;
  }
  try {
    const started = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return started ? `ps:${started}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A zombie (killed, not yet reaped by its parent) still answers kill(pid, 0) but runs nothing:
 * on Linux its state in /proc/<pid>/stat is Z (or X), and it counts as gone.
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

export function isPidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

// Child processes of a step, each in its own process group, so that stopping a step (Ctrl+C,
// timeout, or its end) stops everything it started: no orphans keep editing the working tree.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

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

export interface RunProcessOptions {
  /** The program, or with `shell` the whole command line for /bin/sh -c. */
  command: string;
  args?: string[];
  shell?: boolean;
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  timeoutMs?: number;
  /** Keep stdout and stderr bytes in the result (exactly as produced). */
  capture?: boolean;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  groups: ProcessGroups;
}

export interface RunProcessResult {
  /** The exit code; 128 + signal number when killed by a signal; 124 on timeout. */
  exitCode: number;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: Buffer;
  stderr: Buffer;
  durationMs: number;
}

export function runProcess(options: RunProcessOptions): Promise<RunProcessResult> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(options.command, options.args ?? [], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      shell: options.shell ?? false,
      // A new session and process group: the whole tree can be signalled as one.
      detached: GROUPS,
      stdio: [options.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;

    child.on('error', (error) => {
      if (timer) clearTimeout(timer);
      if (child.pid !== undefined) options.groups.delete(child.pid);
      reject(error);
    });
    if (child.pid === undefined) return; // 'error' follows
    const pid = child.pid;
    options.groups.add(pid);

    if (options.input !== undefined && child.stdin) {
      child.stdin.on('error', () => {
        // The process may exit without reading its input (EPIPE): not our failure.
      });
      child.stdin.end(options.input);
    }
    child.stdout!.on('data', (chunk: Buffer) => {
      if (options.capture) stdout.push(chunk);
      options.onStdout?.(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (options.capture) stderr.push(chunk);
      options.onStderr?.(chunk);
    });
    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        options.groups.terminate(pid);
      }, options.timeoutMs);
      timer.unref();
    }
    child.on('exit', () => {
      // Whatever the step left running in its group ends with it (this also lets 'close' come:
      // a background process would otherwise hold the output pipes open).
      options.groups.terminate(pid);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      options.groups.delete(pid);
      const signalNumber = signal ? (constants.signals[signal] ?? 0) : 0;
      const exitCode = timedOut ? 124 : (code ?? (signal ? 128 + signalNumber : 1));
      resolve({
        exitCode,
        signal,
        timedOut,
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr),
        durationMs: Date.now() - started,
      });
    });
  });
}

/** Quotes text for /bin/sh: one argument, whatever it contains. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

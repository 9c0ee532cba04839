// Starts one process of a step through its executor (local or sandboxed), in a process group of
// its own, with an optional timeout that stops the whole group, and captures or streams output.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { localExecutor } from './local.js';
import type { ProcessGroups } from './process-groups.js';
import type { Launch, ProcessExecutor } from './types.js';

const GROUPS = process.platform !== 'win32';

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
  /** How the process starts: on this machine (default) or in the task's sandbox. */
  executor?: ProcessExecutor | undefined;
}

export interface RunProcessResult {
  /** The exit code; 128 + signal number when killed by a signal; 124 on timeout. */
  exitCode: number;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: Buffer;
  stderr: Buffer;
  durationMs: number;
  /** Set when a failure looks like the sandbox policy's doing: which rule, and how to change it. */
  sandboxNote?: string;
}

export async function runProcess(options: RunProcessOptions): Promise<RunProcessResult> {
  const launch = await (options.executor ?? localExecutor).prepare({
    command: options.command,
    args: options.args ?? [],
    shell: options.shell ?? false,
    cwd: options.cwd,
    env: options.env ?? process.env,
  });
  try {
    const { result, stderrTail } = await spawnProcess(options, launch);
    const violation = launch.verify?.();
    if (violation) throw violation;
    if (result.exitCode !== 0 && !result.timedOut && launch.explain) {
      const note = launch.explain(stderrTail);
      if (note) return { ...result, sandboxNote: note };
    }
    return result;
  } finally {
    launch.finished();
  }
}

/** Enough of stderr to see why a command failed. */
const STDERR_TAIL_BYTES = 8192;

function spawnProcess(options: RunProcessOptions, launch: Launch): Promise<{ result: RunProcessResult; stderrTail: string }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(launch.command, launch.args, {
      cwd: options.cwd,
      env: launch.env,
      shell: launch.shell,
      // A new session and process group: the whole tree can be signalled as one.
      detached: GROUPS,
      stdio: [options.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let tail = Buffer.alloc(0);
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
      tail = Buffer.concat([tail, chunk]).subarray(-STDERR_TAIL_BYTES);
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
        result: { exitCode, signal, timedOut, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr), durationMs: Date.now() - started },
        stderrTail: tail.toString('utf8'),
      });
    });
  });
}

/** Quotes text for /bin/sh: one argument, whatever it contains. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

// Starts one process of a step through its executor (local or sandboxed), in a process group of
// its own, with an optional timeout that stops the whole group, and captures or streams output.
import { constants } from 'node:os';
import { localExecutor } from './local.js';
import type { ProcessGroups } from './process-groups.js';
import { localSpawner } from './spawn-here.js';
import type { Launch, ProcessExecutor } from './types.js';

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
  /**
   * Stop the process when it wrote nothing on stdout for `ms` while `paused()` is false (an agent
   * waiting on a model API that hangs); the result then says `stalled`.
   */
  stall?: { ms: number; paused: () => boolean } | undefined;
}

export interface RunProcessResult {
  /** The exit code; 128 + signal number when killed by a signal; 124 on timeout. */
  exitCode: number;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Stopped by RunProcessOptions.stall. */
  stalled?: boolean;
  stdout: Buffer;
  stderr: Buffer;
  durationMs: number;
  /** Set when a failure looks like the sandbox policy's doing: which rule, and how to change it. */
  sandboxNote?: string;
}

/**
 * How many times a sandboxed command whose sandbox failed in its own set-up is started in all.
 * bubblewrap binds the task's own files one by one (policy.ts), and a file atlas replaces by rename
 * at that moment (HOOK.md, while a step reports progress) fails the bind: a race, not a refusal.
 * Even with the file replaced without pause, about one start in eight fails so.
 */
export const SETUP_ATTEMPTS = 8;

export async function runProcess(options: RunProcessOptions): Promise<RunProcessResult> {
  for (let attempt = 1; ; attempt++) {
    const launch = await (options.executor ?? localExecutor).prepare({
      command: options.command,
      args: options.args ?? [],
      shell: options.shell ?? false,
      cwd: options.cwd,
      env: options.env ?? process.env,
    });
    try {
      const outcome = await spawnProcess(options, launch, attempt < SETUP_ATTEMPTS);
      if (outcome === 'setup-failed') continue;
      const { result, stderrTail } = outcome;
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
}

/** Enough of stderr to see why a command failed. */
const STDERR_TAIL_BYTES = 8192;

/** bubblewrap's own messages start so; the command never ran when one ends an unstarted attempt. */
const SANDBOX_SETUP_ERROR = /^bwrap: /m;

type Spawned = { result: RunProcessResult; stderrTail: string };

function spawnProcess(options: RunProcessOptions, launch: Launch, mayRetry: boolean): Promise<Spawned | 'setup-failed'> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = (launch.spawner ?? localSpawner).spawn({
      command: launch.command,
      args: launch.args,
      shell: launch.shell,
      cwd: options.cwd,
      env: launch.env,
      ...(options.input !== undefined ? { input: options.input } : {}),
      fd3: launch.signalsStart === true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let tail = Buffer.alloc(0);
    let timedOut = false;
    let stalled = false;
    let timer: NodeJS.Timeout | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    let lastOutput = Date.now();
    // Until the command itself began, output is held: a sandbox that failed in its set-up is tried again.
    let begun = !launch.signalsStart;
    const held: Array<{ err: boolean; chunk: Buffer }> = [];

    const deliver = (err: boolean, chunk: Buffer) => {
      if (!err) {
        lastOutput = Date.now();
        if (options.capture) stdout.push(chunk);
        options.onStdout?.(chunk);
        return;
      }
      if (options.capture) stderr.push(chunk);
      tail = Buffer.concat([tail, chunk]).subarray(-STDERR_TAIL_BYTES);
      options.onStderr?.(chunk);
    };
    const take = (err: boolean) => (chunk: Buffer) => (begun ? deliver(err, chunk) : held.push({ err, chunk }));
    const release = () => {
      begun = true;
      for (const { err, chunk } of held.splice(0)) deliver(err, chunk);
    };

    let pid: number | undefined;
    child.on('error', (error) => {
      if (timer) clearTimeout(timer);
      if (watchdog) clearInterval(watchdog);
      if (pid !== undefined) options.groups.delete(pid);
      reject(error);
    });
    // A process this one spawned has its pid at once; one a spawner starts, at 'spawn'.
    const begin = (started: number) => {
      pid = started;
      options.groups.add(started);
      child.stdout!.on('data', take(false));
      child.stderr!.on('data', take(true));
      child.stdio[3]?.on('data', release);
      if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
        timer = setTimeout(() => {
          timedOut = true;
          options.groups.terminate(started);
        }, options.timeoutMs);
        timer.unref();
      }
      const stall = options.stall;
      if (stall) {
        watchdog = setInterval(
          () => {
            if (stall.paused()) lastOutput = Date.now();
            else if (Date.now() - lastOutput >= stall.ms && !stalled) {
              stalled = true;
              options.groups.terminate(started);
            }
          },
          Math.max(20, Math.min(1000, stall.ms / 5)),
        );
        watchdog.unref();
      }
    };
    if (child.pid !== undefined) begin(child.pid);
    else child.once('spawn', () => begin(child.pid!));
    child.on('exit', () => {
      // Whatever the step left running in its group ends with it (this also lets 'close' come:
      // a background process would otherwise hold the output pipes open).
      if (pid !== undefined) options.groups.terminate(pid);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      if (watchdog) clearInterval(watchdog);
      if (pid !== undefined) options.groups.delete(pid);
      const signalNumber = signal ? (constants.signals[signal] ?? 0) : 0;
      const exitCode = timedOut || stalled ? 124 : (code ?? (signal ? 128 + signalNumber : 1));
      if (!begun && mayRetry && !timedOut && !stalled && signal === null && exitCode !== 0) {
        const said = Buffer.concat(held.filter((h) => h.err).map((h) => h.chunk)).toString('utf8');
        if (SANDBOX_SETUP_ERROR.test(said)) return resolve('setup-failed');
      }
      release();
      resolve({
        result: {
          exitCode,
          signal,
          timedOut,
          ...(stalled ? { stalled } : {}),
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr),
          durationMs: Date.now() - started,
        },
        stderrTail: tail.toString('utf8'),
      });
    });
  });
}

/** Quotes text for /bin/sh: one argument, whatever it contains. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

// Seed 002's executor interface: one seam decides how a step's processes start. The local
// executor starts them as they are; the sandboxed one wraps each in an OS sandbox. Step executors
// and agent runners hand their processes to runProcess with the step's executor and never ask
// which one it is.

import type { Readable, Writable } from 'node:stream';

// The mode is signed into receipts (message version 3): one definition, in the domain.
import type { ExecutionMode } from '../domain/receipt.js';

export type { ExecutionMode };

/** A process as a step asks for it. */
export interface LaunchSpec {
  /** The program, or with `shell` the whole command line for /bin/sh -c. */
  command: string;
  args: string[];
  shell: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** The process as it will really be started. */
export interface Launch {
  command: string;
  args: string[];
  shell: boolean;
  env: NodeJS.ProcessEnv;
  /** Called once when the process has ended (the sandbox removes its mount points). */
  finished(): void;
  /** Explains a failure in terms of the sandbox policy (stderr of a failed command), if it applies. */
  explain?(stderr: string): string | undefined;
  /** After the process ended: an error that must stop the task (the sandbox's git layout check). */
  verify?(): Error | undefined;
  /**
   * The process writes a byte on its fd 3 once the command itself begins (the sandbox's set-up is
   * done): an attempt that ends without it never ran the command, and its output is the sandbox's.
   */
  signalsStart?: boolean;
  /** Who starts it: a spawner process (src/exec/spawner/), or by default this process itself. */
  spawner?: ProcessSpawner;
}

/** A process to start, as a spawner gets it. */
export interface SpawnSpec {
  command: string;
  args: string[];
  shell: boolean;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  /** A pipe on fd 3 (Launch.signalsStart). */
  fd3: boolean;
}

/**
 * A started process as runProcess uses it (a ChildProcess is one). It runs in a new session and
 * process group of its own, led by `pid`; `pid` is set by 'spawn' at the latest.
 */
export interface SpawnedChild {
  readonly pid?: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: readonly (Readable | Writable | null | undefined)[];
  on(event: 'error', listener: (error: Error) => void): this;
  on(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  once(event: 'spawn', listener: () => void): this;
}

/** Starts processes: this process itself (spawn-here.ts), or the spawner on its behalf. */
export interface ProcessSpawner {
  spawn(spec: SpawnSpec): SpawnedChild;
}

export interface ProcessExecutor {
  readonly mode: ExecutionMode;
  prepare(spec: LaunchSpec): Promise<Launch>;
  /**
   * A step begins: what the executor learned of the worktree (the sandbox's scan for protected
   * files) is looked at again before its next process; within a step it is reused.
   */
  beginStep?(): void;
  /** The run has ended: release what the executor holds. */
  close?(): Promise<void>;
}

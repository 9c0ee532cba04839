// Tasks over HTTP run as ordinary `atlas` child processes (start, resume, recover), each in a
// process group of its own: the task's owner is that child, so `atlas status`, `recover` and
// `verify` see an ordinary task, and a server crash leaves it running or, if it dies, crashed and
// recoverable like any other. While a child runs, its hook.json is watched and every state
// change, checkpoint and receipt, and the child's output lines, go to the task's event log, in the
// order they happened: the hook is read again before each piece of output is logged (a step's
// start comes before its output), on every change of the task folder, and at the end.

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { FSWatcher } from 'node:fs';
import { watch } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Hook } from '../../domain/hook.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { ServerContext } from '../http/context.js';
import type { EventLog } from '../state/event-log.js';

export interface ChildResult {
  exitCode: number;
  /** The child's --json document (its result, or `{error}`). */
  json: Record<string, unknown> | undefined;
  stderrTail: string;
}

export interface TaskChild {
  child: ChildProcess;
  done: Promise<ChildResult>;
  attach(log: EventLog, watcher: HookWatcher): void;
}

/** A fallback for file systems without change notifications. */
const POLL_MS = 1000;

/** Turns hook.json changes into events: new history entries, checkpoints and receipts. */
export class HookWatcher {
  private history = 0;
  private checkpoints = new Set<string>();
  private receipts = new Set<string>();

  constructor(
    readonly taskDir: string,
    /** The log, or how to open it when the first event comes (a watcher of many idle tasks opens few). */
    private readonly logOf: EventLog | (() => EventLog),
    seed = true,
  ) {
    if (seed) this.scan(false);
  }

  private get log(): EventLog {
    return typeof this.logOf === 'function' ? this.logOf() : this.logOf;
  }

  private read(): Hook | undefined {
    try {
      return readHookFile(taskFiles(this.taskDir).hook);
    } catch {
      return undefined;
    }
  }

  /** Reads the hook and appends what is new (or only remembers it, for the starting point); returns the hook read. */
  scan(emit = true, hook: Hook | undefined = this.read()): Hook | undefined {
    if (!hook) return undefined;
    for (const h of hook.history.slice(this.history)) {
      // EventLog.append never rejects: a failed append is reported by the log itself.
      if (emit)
        void this.log.append('state', {
          from: h.from_state,
          to: h.to_state,
          trigger: h.trigger,
          step: h.step_name ?? null,
          at_hook: h.timestamp,
        });
    }
    this.history = hook.history.length;
    for (const c of hook.checkpoints) {
      if (this.checkpoints.has(c.checkpoint_id)) continue;
      this.checkpoints.add(c.checkpoint_id);
      if (emit)
        void this.log.append('checkpoint', {
          id: c.checkpoint_id,
          step: c.step_name,
          description: c.description,
          trigger: c.trigger,
          commit: c.git_commit ?? null,
        });
    }
    for (const r of hook.receipts) {
      if (this.receipts.has(r.receipt_id)) continue;
      this.receipts.add(r.receipt_id);
      if (emit)
        void this.log.append('receipt', {
          id: r.receipt_id,
          step: r.step_name,
          command: r.command,
          exit_code: r.exit_code,
          duration: r.duration,
        });
    }
    return hook;
  }
}

/**
 * Runs `atlas --json <args>` in `cwd`. `attach` sends its output lines and hook changes to a log
 * from then on (`atlas start` is attached once its task exists).
 */
export function runAtlasChild(ctx: ServerContext, args: string[], cwd: string): TaskChild {
  const child = spawn(ctx.atlasCommand.command, [...ctx.atlasCommand.args, '--json', ...args], {
    cwd,
    env: { ...process.env, ATLAS_HOME: ctx.home },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a Ctrl+C meant for the server does not reach the task, and the task
    // outlives a server crash as an ordinary task.
    detached: true,
  });
  let stdout = '';
  let stderrTail = '';
  let partial = '';
  let log: EventLog | undefined;
  let watcher: HookWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let changes: FSWatcher | undefined;
  const decoder = new StringDecoder('utf8');
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = decoder.write(chunk);
    stderrTail = (stderrTail + text).slice(-4000);
    if (!log) return;
    watcher?.scan();
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.length > 0) log.append('output', { text: line });
  });
  const done = new Promise<ChildResult>((resolve) => {
    let finished = false;
    const finish = (exitCode: number) => {
      if (finished) return;
      finished = true;
      if (timer) clearInterval(timer);
      changes?.close();
      watcher?.scan();
      if (log && partial.length > 0) log.append('output', { text: partial });
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      resolve({ exitCode, json, stderrTail });
    };
    child.on('error', (error) => {
      stderrTail += error.message;
      finish(-1);
    });
    child.on('close', (code, signal) => finish(code ?? (signal ? 143 : -1)));
  });
  return {
    child,
    done,
    attach(to, w) {
      log = to;
      watcher = w;
      timer = setInterval(() => w.scan(), POLL_MS);
      timer.unref();
      try {
        // hook.json is replaced by a rename: the folder's change events say when.
        changes = watch(w.taskDir, { persistent: false }, () => w.scan());
        changes.on('error', () => changes?.close());
      } catch {
        // no notifications here: the poll does it
      }
    },
  };
}

/** Waits up to `ms` for the child to end: true when it did. */
export async function endsWithin(task: TaskChild, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((ok) => {
    timer = setTimeout(ok, ms, 'late');
  });
  const outcome = await Promise.race([task.done, late]);
  clearTimeout(timer);
  return outcome !== 'late';
}

// `atlas ui` follows the tasks other processes run on this machine (a terminal's `atlas start`):
// each new task folder under ATLAS_HOME is given to the `local` account, and every change of a
// task's hook.json becomes events in its log (state changes, checkpoints, receipts, the running
// step's output from current_step.last_output, `finished` when it comes to rest), which the
// account's event stream copies for the board. Changes are noticed by fs.watch on the workspaces'
// task folders and on the folders of tasks that are not over (at most `maxWatches` handles), and
// by a debounced full scan every `scanMs` (one stat per task; `atlas status`'s liveness check only
// for tasks a process works on): bounded work for 1,000+ tasks.

import type { FSWatcher } from 'node:fs';
import { existsSync, mkdirSync, readFileSync, statSync, watch } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Hook } from '../../domain/hook.js';
import { isTerminal } from '../../domain/hook-state.js';
import { endedStepOutputs, outputAdded, outputLines } from '../../domain/output-delta.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { toJson } from '../../store/json-file.js';
import { taskFiles } from '../../store/paths.js';
import type { TaskRef } from '../../store/task-store.js';
import { listDirs, tryReadTask, workspaceTaskRefs } from '../../store/task-store.js';
import { serverDir } from '../accounts/tokens.js';
import type { ServerContext } from '../http/context.js';
import { HookWatcher } from '../tasks/task-children.js';
import type { ServerTaskRecord, Tasks } from '../tasks/tasks.js';

/** Hook states in which a process works on the task. */
const BUSY = new Set(['initializing', 'step_pending', 'step_running', 'step_validating', 'recovering']);
/** What `atlas status` says of a busy task whose process is gone. */
const GONE = new Set(['crashed', 'paused', 'not_responding']);

/**
 * The server's record of the task, made for `account` when no account owns it yet. Undefined: not
 * readable yet, another account's, or a task `atlas serve` is starting (it records it itself).
 */
export function adoptTask(home: string, ref: TaskRef, account: string): ServerTaskRecord | undefined {
  const dir = join(serverDir(home), 'tasks');
  const path = join(dir, `${ref.id}.json`);
  if (existsSync(path)) {
    try {
      const record = JSON.parse(readFileSync(path, 'utf8')) as ServerTaskRecord;
      return record.account === account ? record : undefined;
    } catch {
      return undefined;
    }
  }
  if (ref.workspace.startsWith('srv-')) return undefined;
  const task = tryReadTask(ref.dir);
  if (!task) return undefined;
  const record: ServerTaskRecord = {
    task_id: ref.id,
    account,
    workspace: ref.workspace,
    dir: ref.dir,
    repo: task.repo_root,
    template: task.template,
    created_at: task.created_at,
    host: hostname(),
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(path, toJson(record));
  return record;
}

interface Followed {
  record: ServerTaskRecord;
  /** The version of hook.json last read (see mtimeOf). */
  mtime: string;
  hook: HookWatcher;
  /** The running step's index and what its last_output held when last read. */
  step: number | undefined;
  output: string;
  pending: string;
  /** History events read (the steps that ended since: their output's tail is in their step_complete). */
  history: number;
  /** Another process works on it (the server's own commands are followed by the server). */
  busy: boolean;
  /** The server runs a command on it (until that command's end): the server logs its changes. */
  serverRan: boolean;
  watcher?: FSWatcher | undefined;
}

export interface LocalWatchOptions {
  scanMs?: number;
  debounceMs?: number;
  maxWatches?: number;
}

export class LocalTaskWatcher {
  private readonly followed = new Map<string, Followed>();
  /** Watchers of the workspaces' folders (or, until a folder exists, of its parent). */
  private readonly dirs = new Map<string, FSWatcher>();
  private readonly dirty = new Set<string>();
  private full = false;
  private timer: NodeJS.Timeout | undefined;
  private interval: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly scanMs: number;
  private readonly debounceMs: number;
  private readonly maxWatches: number;

  constructor(
    private readonly ctx: ServerContext,
    private readonly tasks: Tasks,
    private readonly account: string,
    options: LocalWatchOptions = {},
  ) {
    this.scanMs = options.scanMs ?? 3000;
    this.debounceMs = options.debounceMs ?? 100;
    this.maxWatches = options.maxWatches ?? 256;
  }

  /** How many fs.watch handles are open (bounded by maxWatches). */
  get watches(): number {
    return this.dirs.size + [...this.followed.values()].filter((f) => f.watcher).length;
  }

  start(): void {
    // The server's own commands log their changes themselves: the watcher only keeps up with them.
    this.tasks.onCommand = (id, done) => {
      const f = this.followed.get(id);
      if (!f) return;
      f.serverRan = true;
      void done.then(() => {
        // The server's last reading of the hook is done (its `finished` is logged): start from there.
        f.serverRan = false;
        if (this.stopped) return;
        f.mtime = mtimeOf(f.record.dir) ?? f.mtime;
        const h = f.hook.scan(false);
        this.remember(f, h);
        this.setBusy(f, h, false);
      });
    };
    this.scanAll(false);
    this.interval = setInterval(() => this.soon(), this.scanMs);
    this.interval.unref();
  }

  stop(): void {
    this.stopped = true;
    this.tasks.onCommand = undefined;
    if (this.timer) clearTimeout(this.timer);
    if (this.interval) clearInterval(this.interval);
    for (const w of this.dirs.values()) w.close();
    this.dirs.clear();
    for (const f of this.followed.values()) f.watcher?.close();
  }

  /**
   * Schedules a look at one task (at once: a step's last output is in hook.json only until the
   * step-complete write that follows it), or at everything (debounced).
   */
  private soon(id?: string): void {
    if (this.stopped) return;
    if (id && this.followed.has(id)) this.dirty.add(id);
    else this.full = true;
    this.timer ??= setTimeout(
      () => {
        this.timer = undefined;
        this.flush();
      },
      this.full ? this.debounceMs : 0,
    );
  }

  private flush(): void {
    if (this.stopped) return;
    const ids = [...this.dirty];
    this.dirty.clear();
    try {
      if (this.full) {
        this.full = false;
        this.scanAll(true);
      } else {
        for (const id of ids) this.check(this.followed.get(id)!, true, false);
      }
    } catch (error) {
      this.ctx.log({ level: 'error', msg: 'local task watch failed', error: (error as Error).message });
    }
  }

  private watchDir(path: string, onChange: () => void, onGone: () => void = () => undefined): FSWatcher | undefined {
    if (this.watches >= this.maxWatches) return undefined;
    try {
      const w = watch(path, { persistent: false }, onChange);
      // A folder removed (`atlas cleanup`): the handle is given back; the scan watches it again if it returns.
      w.on('error', () => (w.close(), onGone()));
      return w;
    } catch {
      // Not there yet, or no notifications here: the full scan sees it.
      return undefined;
    }
  }

  private scanAll(emit: boolean): void {
    const root = join(this.ctx.home, 'workspaces');
    this.keepDirOrParent(root, this.ctx.home);
    const seen = new Set<string>();
    for (const workspace of listDirs(root)) {
      this.keepDirOrParent(join(root, workspace, 'tasks'), join(root, workspace));
      for (const ref of workspaceTaskRefs(root, workspace)) {
        seen.add(ref.id);
        const f = this.followed.get(ref.id);
        if (f) this.check(f, emit, true);
        else this.discover(ref, emit);
      }
    }
    // Removed by `atlas cleanup`: no longer followed.
    for (const [id, f] of this.followed) {
      if (seen.has(id)) continue;
      f.watcher?.close();
      this.followed.delete(id);
      this.tasks.elsewhere.delete(id);
    }
  }

  /**
   * Watches a folder, or while it does not exist yet, its parent (a new workspace's `tasks/` comes
   * just after the workspace: its creation then asks for a scan at once, not at the next interval).
   */
  private keepDirOrParent(path: string, parent: string): void {
    if (!this.dirs.has(path)) this.keepDir(path);
    const stale = this.dirs.get(parent);
    if (this.dirs.has(path)) {
      if (stale) stale.close(), this.dirs.delete(parent);
    } else if (!stale) this.keepDir(parent);
  }

  private keepDir(path: string): void {
    const w = this.watchDir(
      path,
      () => this.soon(),
      () => this.dirs.delete(path),
    );
    if (w) this.dirs.set(path, w);
  }

  private discover(ref: TaskRef, emit: boolean): void {
    const mtime = mtimeOf(ref.dir);
    if (mtime === undefined) return;
    const known = existsSync(join(serverDir(this.ctx.home), 'tasks', `${ref.id}.json`));
    const record = adoptTask(this.ctx.home, ref, this.account);
    if (!record) return;
    // Found while the server runs: its state, opened already, takes the record too (a record written
    // before the start is taken in when the state opens).
    if (!known) {
      void this.ctx
        .state()
        .then((state) => state.putTask(record))
        .catch((error: Error) =>
          this.ctx.log({ level: 'error', msg: 'local task not recorded', task_id: record.task_id, error: error.message }),
        );
    }
    const logOf = () => this.tasks.logOf(record);
    // A task found at start-up is the starting point; one found later is news: its whole history is.
    const hook = new HookWatcher(ref.dir, logOf, false);
    const f: Followed = { record, mtime: '', hook, step: undefined, output: '', pending: '', history: 0, busy: false, serverRan: false };
    this.followed.set(ref.id, f);
    if (!emit) {
      const h = hook.scan(false);
      f.mtime = mtime;
      this.remember(f, h);
      // A hook left busy by a process that is gone (crashed) is not run elsewhere.
      this.setBusy(f, h, false, h !== undefined && BUSY.has(h.state) && this.alive(f));
      return;
    }
    // Found later, it was started by a terminal since the last look: if it is at rest already (it ran
    // between two looks), that run's end is logged like any other.
    f.busy = true;
    this.check(f, true, false);
  }

  /** Reads the task again if its hook changed; on a full scan, also asks whether a busy task's process still lives. */
  private check(f: Followed, emit: boolean, full: boolean): void {
    const id = f.record.task_id;
    const mtime = mtimeOf(f.record.dir);
    if (mtime === undefined) return;
    if (mtime === f.mtime) {
      if (full && f.busy && !this.tasks.isRunning(id)) this.checkAlive(f);
      return;
    }
    f.mtime = mtime;
    if (f.serverRan || this.tasks.isRunning(id)) {
      // The server runs a command on it and logs its changes itself: only remember where it is.
      this.remember(f, f.hook.scan(false));
      this.setBusy(f, undefined, false);
      return;
    }
    const h = f.hook.scan(emit);
    if (!h) return;
    this.output(f, h, emit);
    this.setBusy(f, h, emit);
  }

  private remember(f: Followed, h: Hook | undefined): void {
    f.step = h?.current_step?.step_index;
    f.output = h?.current_step?.last_output ?? '';
    f.pending = '';
    f.history = h?.history.length ?? f.history;
  }

  /** The new output lines of the steps that ended since the last look, then of the running one, from the tails hook.json keeps. */
  private output(f: Followed, h: Hook, emit: boolean): void {
    const log = () => this.tasks.logOf(f.record);
    // EventLog.append never rejects: a failed append is reported by the log itself.
    const line = (text: string) => emit && text.length > 0 && void log().append('output', { text });
    for (const ended of endedStepOutputs(h.history.slice(f.history))) {
      this.take(f, ended.step, ended.output, line);
      line(f.pending);
      Object.assign(f, { step: undefined, output: '', pending: '' });
    }
    f.history = h.history.length;
    this.take(f, h.current_step?.step_index, h.current_step?.last_output ?? '', line);
  }

  private take(f: Followed, index: number | undefined, next: string, line: (text: string) => void): void {
    if (index !== f.step) {
      line(f.pending);
      f.step = index;
      f.output = '';
      f.pending = '';
    }
    const { added, replaced } = outputAdded(f.output, next);
    f.output = next;
    if (replaced) {
      line(f.pending);
      f.pending = '';
    }
    const split = outputLines(f.pending, added);
    f.pending = split.pending;
    for (const l of split.lines) line(l);
  }

  private setBusy(f: Followed, h: Hook | undefined, emit: boolean, working = h !== undefined && BUSY.has(h.state)): void {
    const id = f.record.task_id;
    const busy = working && !this.tasks.isRunning(id);
    // Folders of tasks that are not over are watched (a terminal may take them up again), as many as the cap allows.
    if (h && !isTerminal(h.state) && !f.watcher)
      f.watcher = this.watchDir(
        f.record.dir,
        () => this.soon(id),
        () => (f.watcher = undefined),
      );
    if (f.watcher && h && isTerminal(h.state)) {
      f.watcher.close();
      f.watcher = undefined;
    }
    if (busy === f.busy) {
      if (busy) this.tasks.elsewhere.add(id);
      return;
    }
    f.busy = busy;
    if (busy) {
      this.tasks.elsewhere.add(id);
      return;
    }
    this.tasks.elsewhere.delete(id);
    if (emit && h) this.rest(f, h.state, null);
  }

  /** The task came to rest (a person's step, the end, or its process died). */
  private rest(f: Followed, state: string, message: string | null): void {
    const log = this.tasks.logOf(f.record);
    // EventLog.append never rejects: a failed append is reported by the log itself.
    if (f.pending) void log.append('output', { text: f.pending });
    f.pending = '';
    void log.append('finished', { command: 'terminal', state, exit_code: null, message });
  }

  /** What `atlas status` says: does a process still work on it? */
  private activity(f: Followed): { activity: string; state: string } | undefined {
    try {
      return this.tasks.summary(f.record);
    } catch {
      return undefined;
    }
  }

  private alive(f: Followed): boolean {
    const a = this.activity(f);
    return a !== undefined && !GONE.has(a.activity);
  }

  private checkAlive(f: Followed): void {
    const a = this.activity(f);
    if (!a || !GONE.has(a.activity)) return;
    f.busy = false;
    this.tasks.elsewhere.delete(f.record.task_id);
    this.rest(f, a.state, `its process is gone: ${a.activity}`);
  }
}

/** Which version of hook.json is there: it is replaced by a rename, so a new one is a new inode. */
function mtimeOf(dir: string): string | undefined {
  const s = statSync(taskFiles(dir).hook, { throwIfNoEntry: false });
  return s ? `${s.ino}:${s.mtimeMs}:${s.size}` : undefined;
}

// Tasks of the server: POST /tasks starts `atlas start` in a repository inside server.repos_root;
// the task is an ordinary atlas task, and the server keeps only which account owns it (the task
// index) and its event log, both in the server state.

import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, sep } from 'node:path';
import type { RecoveryAction } from '../../domain/recovery-context.js';
import { compareText } from '../../domain/text-order.js';
import { toTimestamp } from '../../domain/time.js';
import type { TaskSummary } from '../../engine/task-list.js';
import { summarizeTask } from '../../engine/task-list.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { TaskRef } from '../../store/task-store.js';
import type { ServerContext } from '../http/context.js';
import { HttpError } from '../http/http.js';
import type { EventLog } from '../state/event-log.js';
import type { TaskIndexRow } from '../state/types.js';
import { logKey } from '../state/types.js';
import type { ChildResult, TaskChild } from './task-children.js';
import { endsWithin, HookWatcher, runAtlasChild } from './task-children.js';

/** Which account started a task over the API: the same record as the state's task index. */
export type ServerTaskRecord = TaskIndexRow;

export const TASK_ACTIONS = ['checkpoint', 'recover', 'approve', 'reject', 'retry', 'abandon', 'cancel'] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

/** What `POST /tasks/{id}/recover` may ask for (`manual` is a person's choice at a terminal). */
export const RECOVER_ACTIONS = ['retry_step', 'retry_from_checkpoint', 'skip_step'] as const satisfies readonly RecoveryAction[];
export type RecoverAction = (typeof RECOVER_ACTIONS)[number];

/** How long a cancelled task's command may take to park itself before it is killed. */
const CANCEL_WAIT_MS = 30_000;
/** How long an action waits for a command that left its task waiting for a person to exit. */
const ENDING_MS = 15_000;

const TASK_ID = /^task-[0-9]{8}-[0-9]{6}(?:-[0-9a-z]+)?$/;
const START_WAIT_MS = 60_000;

export class Tasks {
  private readonly running = new Map<string, TaskChild>();
  /** Tasks whose running command is being cancelled: their log gets `cancelled` before `finished`. */
  private readonly cancelling = new Set<string>();

  constructor(private readonly ctx: ServerContext) {}

  /** Tasks another process on this machine runs (a terminal's `atlas start`), as `atlas ui` sees them. */
  readonly elsewhere = new Set<string>();
  /** Told when the server starts a command on a task, with the promise of its end (local-watch.ts). */
  onCommand: ((id: string, done: Promise<unknown>) => void) | undefined;

  get runningCount(): number {
    return this.running.size;
  }

  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Running here or elsewhere: its event stream stays open for more. */
  isLive(id: string): boolean {
    return this.running.has(id) || this.elsewhere.has(id);
  }

  async record(id: string): Promise<ServerTaskRecord | undefined> {
    if (!TASK_ID.test(id)) return undefined;
    return (await this.ctx.state()).getTask(id);
  }

  /**
   * The account's task, or 404 (also for another account's: never their data). A task another
   * machine holds is 421: its repository, worktree and hook are on that machine's disk.
   */
  async owned(account: string, id: string): Promise<ServerTaskRecord> {
    const r = await this.record(id);
    if (!r || r.account !== account) throw new HttpError(404, 'not_found', `no task ${id}`);
    if (r.host !== '' && r.host !== hostname()) {
      throw new HttpError(
        421,
        'task_elsewhere',
        `task ${id} is on the server at ${r.host}: a task stays on the machine that started it, so send its requests there`,
        { host: r.host },
      );
    }
    if (!existsSync(r.dir)) throw new HttpError(404, 'not_found', `no task ${id}`);
    return r;
  }

  logOf(r: ServerTaskRecord): EventLog {
    return this.ctx.logs.get(logKey.task(r.task_id));
  }

  /** The repository, resolved, if it lies inside server.repos_root. */
  private repoInsideRoot(repo: string): string {
    const root = this.ctx.config.server.repos_root;
    if (!root) throw new HttpError(403, 'tasks_disabled', 'tasks over HTTP are off: the server has no server.repos_root configured');
    let realRoot: string;
    let real: string;
    try {
      realRoot = realpathSync(root);
    } catch {
      throw new HttpError(500, 'repos_root_missing', 'server.repos_root does not exist on the server');
    }
    const candidate = repo.startsWith('/') ? repo : join(realRoot, repo);
    try {
      real = realpathSync(candidate);
    } catch {
      throw new HttpError(400, 'invalid_field', `repo: no repository "${repo}" under server.repos_root`, { field: 'repo' });
    }
    if (real !== realRoot && !real.startsWith(realRoot + sep)) {
      throw new HttpError(400, 'invalid_field', 'repo: must be inside server.repos_root', { field: 'repo' });
    }
    return real;
  }

  async create(
    account: string,
    repo: string,
    template: string,
    description: string,
    aborted?: AbortSignal,
    mode?: 'local' | 'sandbox',
  ): Promise<{ record: ServerTaskRecord; summary: TaskSummary }> {
    if (this.ctx.stopping) throw new HttpError(503, 'server_stopping', 'the server is stopping');
    const cwd = this.repoInsideRoot(repo);
    const workspace = `srv-${randomBytes(5).toString('hex')}`;
    const release = await this.ctx.work.acquire(account, aborted);
    // After `--`, a description starting with "-" is text, not an option.
    const child = runAtlasChild(
      this.ctx,
      ['start', '--workspace', workspace, '--no-interactive', ...(mode ? [`--${mode}`] : []), '--', template, description],
      cwd,
    );
    // The slot is the child's until it has exited, whatever becomes of this request.
    void child.done.then(release);
    const wsTasks = join(this.ctx.home, 'workspaces', workspace, 'tasks');
    let exited: ChildResult | undefined;
    void child.done.then((r) => (exited = r));
    const started = Date.now();
    let taskId: string | undefined;
    while (!taskId) {
      try {
        taskId = readdirSync(wsTasks).find((n) => TASK_ID.test(n) && existsSync(join(wsTasks, n, 'hook.json')));
      } catch {
        // Not created yet.
      }
      if (taskId) break;
      if (exited) {
        const err = (exited.json?.['error'] as { message?: string; hint?: string } | undefined) ?? {};
        throw new HttpError(
          exited.exitCode === 4 ? 404 : 422,
          'task_not_started',
          err.message ?? `atlas start exited with code ${exited.exitCode}: ${exited.stderrTail.trim().split('\n').pop() ?? ''}`,
          err.hint ? { hint: err.hint } : {},
        );
      }
      if (Date.now() - started > START_WAIT_MS) throw new HttpError(504, 'task_not_started', 'atlas start did not create the task in time');
      await new Promise((r) => setTimeout(r, 25));
    }
    const dir = join(wsTasks, taskId);
    const record: ServerTaskRecord = {
      task_id: taskId,
      account,
      workspace,
      dir,
      repo: cwd,
      template,
      created_at: toTimestamp(new Date()),
      host: hostname(),
    };
    await (await this.ctx.state()).putTask(record);
    this.supervise(record, 'start', child);
    return { record, summary: this.summary(record) };
  }

  /** Follows a child of the task: output and hook changes to the log, `finished` at the end. */
  private supervise(record: ServerTaskRecord, command: string, child: TaskChild): void {
    const log = this.logOf(record);
    // `atlas start` reports its first state changes before it is attached: they are events too.
    child.attach(log, new HookWatcher(record.dir, log, command !== 'start'));
    // EventLog.append never rejects: a failed append is reported by the log itself.
    void log.append('started', { command, task_id: record.task_id });
    this.running.set(record.task_id, child);
    this.onCommand?.(record.task_id, child.done);
    void child.done.then((r) => {
      this.running.delete(record.task_id);
      if (this.cancelling.delete(record.task_id)) void log.append('cancelled', { command });
      let state: string | null = null;
      try {
        state = readHookFile(taskFiles(record.dir).hook).state;
      } catch {
        // unreadable: reported as null
      }
      const err = r.json?.['error'] as { message?: string } | undefined;
      void log.append('finished', {
        command,
        state,
        exit_code: r.exitCode,
        message: (r.json?.['message'] as string | undefined) ?? err?.message ?? null,
      });
      this.ctx.log({ msg: 'task child finished', task_id: record.task_id, command, exit_code: r.exitCode, state });
    });
  }

  /** Runs an atlas child for the task in a slot of its account's running work. */
  private async spawnFor(record: ServerTaskRecord, command: string, args: string[]): Promise<void> {
    const release = await this.ctx.work.acquire(record.account);
    const child = runAtlasChild(this.ctx, args, record.repo);
    void child.done.then(release);
    this.supervise(record, command, child);
  }

  summary(record: ServerTaskRecord): TaskSummary {
    return summarizeTask({ id: record.task_id, workspace: record.workspace, dir: record.dir } as TaskRef);
  }

  /** Every task the server started (of one account). */
  private async records(account?: string): Promise<ServerTaskRecord[]> {
    const state = await this.ctx.state();
    const accounts = account !== undefined ? [account] : (await state.listAccounts()).map((a) => a.name);
    return (await Promise.all(accounts.map((a) => state.listTasks(a)))).flat();
  }

  /** The account's tasks as the server recorded them (no summary: cheap). */
  recordsOf(account: string): Promise<ServerTaskRecord[]> {
    return this.records(account);
  }

  async list(account: string): Promise<TaskSummary[]> {
    const out: TaskSummary[] = [];
    for (const r of await this.records(account)) {
      try {
        out.push(this.summary(r));
      } catch {
        // A task removed by `atlas cleanup`, or unreadable: not listed.
      }
    }
    return out.sort((a, b) => compareText(b.created_at, a.created_at));
  }

  /** Runs an action; checkpoint and abandon answer when done, the others run the task on. */
  async action(
    account: string,
    id: string,
    action: TaskAction,
    note: string | undefined,
    recoverAction?: RecoverAction,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const r = await this.owned(account, id);
    if (this.ctx.stopping) throw new HttpError(503, 'server_stopping', 'the server is stopping');
    const busy = this.running.has(id);
    const noteArgs = note ? ['--note', note] : [];
    switch (action) {
      case 'checkpoint':
      case 'abandon': {
        const args =
          action === 'checkpoint'
            ? ['checkpoint', note ?? 'checkpoint requested over the API', '--task', id]
            : ['abandon', '--task', id, '--yes', ...noteArgs];
        const result = await runAtlasChild(this.ctx, args, r.repo).done;
        if (result.exitCode !== 0) {
          const err = (result.json?.['error'] as { message?: string; hint?: string } | undefined) ?? {};
          throw new HttpError(
            result.exitCode === 4 ? 404 : 409,
            `${action}_failed`,
            err.message ?? `atlas ${action} exited with code ${result.exitCode}`,
            err.hint ? { hint: err.hint } : {},
          );
        }
        // EventLog.append never rejects: a failed append is reported by the log itself.
        void this.logOf(r).append(action === 'checkpoint' ? 'checkpoint_requested' : 'abandoned', { result: result.json ?? null });
        return { status: 200, body: { task_id: id, action, result: result.json ?? null } };
      }
      case 'cancel': {
        if (!busy) throw new HttpError(409, 'not_running', `task ${id} has no running command to cancel`);
        const state = await this.cancel(r);
        return { status: 200, body: { task_id: id, action, state } };
      }
      default: {
        // A command whose task waits for a person already is only ending (HOOK.md, its exit): the board
        // shows the task waiting, so an action then waits for that end, briefly, instead of a 409.
        const ended = busy && this.summary(r).activity === 'waiting' && (await endsWithin(this.running.get(id)!, ENDING_MS));
        if (busy && (!ended || this.running.has(id)))
          throw new HttpError(409, 'task_running', `task ${id} is running; wait for its finished event`);
        const summary = this.summary(r);
        if (action === 'recover' && summary.activity !== 'crashed' && summary.activity !== 'paused') {
          throw new HttpError(
            409,
            'nothing_to_recover',
            `task ${id} is ${summary.state} (${summary.activity}); only a crashed or interrupted task can be recovered`,
          );
        }
        // Only a step that asks a person is approved: a step that was cut off did nothing yet, and
        // approving it would mark it done (it is recovered instead).
        if (action !== 'recover' && summary.activity !== 'waiting') {
          const why =
            summary.activity === 'paused'
              ? `its step was cut off (${summary.state}); POST /tasks/${id}/recover runs it again`
              : `it is ${summary.state}`;
          throw new HttpError(409, 'not_waiting', `task ${id} does not wait for a person: ${why}`);
        }
        // retry: `atlas resume --note` without --approve/--reject runs a failed step again, the note in its prompt.
        const args =
          action === 'recover'
            ? ['recover', '--task', id, ...(recoverAction ? ['--action', recoverAction] : ['--yes'])]
            : [
                'resume',
                '--task',
                id,
                ...(action === 'retry' ? [] : [action === 'approve' ? '--approve' : '--reject']),
                '--no-interactive',
                ...noteArgs,
              ];
        await this.spawnFor(r, action, args);
        return { status: 202, body: { task_id: id, action, events: `/tasks/${id}/events` } };
      }
    }
  }

  /** Tasks of this server that crashed (their process died), for start-up `--recover`. */
  async findCrashed(): Promise<ServerTaskRecord[]> {
    const out: ServerTaskRecord[] = [];
    for (const r of await this.records()) {
      if (this.running.has(r.task_id)) continue;
      try {
        const s = this.summary(r);
        if (s.activity === 'crashed' || s.activity === 'paused') out.push(r);
      } catch {
        // unreadable: not recoverable from here
      }
    }
    return out;
  }

  recoverInBackground(r: ServerTaskRecord): void {
    this.spawnFor(r, 'recover', ['recover', '--task', r.task_id, '--yes']).catch((error: Error) =>
      this.ctx.log({ level: 'error', msg: 'recover failed', task_id: r.task_id, error: error.message }),
    );
  }

  /** Checkpoints a running command's task, then interrupts it (it parks the task, recoverable). */
  private async interrupt(r: ServerTaskRecord, why: string): Promise<void> {
    await runAtlasChild(this.ctx, ['checkpoint', why, '--task', r.task_id, '--trigger', 'manual'], r.repo).done;
    signalGroup(this.running.get(r.task_id)?.child.pid, 'SIGTERM');
  }

  /** Cancels the running command: checkpointed, interrupted, killed if it does not stop in time. */
  private async cancel(r: ServerTaskRecord): Promise<string | null> {
    const running = this.running.get(r.task_id)!;
    this.cancelling.add(r.task_id);
    await this.interrupt(r, 'cancelled over the API');
    if (!(await endsWithin(running, CANCEL_WAIT_MS))) {
      signalGroup(running.child.pid, 'SIGKILL');
      await running.done;
    }
    return this.summary(r).state;
  }

  /** Grace period over: each running child is checkpointed, then interrupted (it parks the task). */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.running.keys()].map(async (id) => {
        const r = await this.record(id);
        if (r) await this.interrupt(r, 'server stopping');
      }),
    );
  }

  async settled(): Promise<void> {
    await Promise.all([...this.running.values()].map((c) => c.done));
  }
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

// The lifecycle runner: for each point, atlas's builtin default, then the template's commands,
// then the configuration's, in that order. Every run is a line in the task's lifecycle.log.
// Criticality (seeds 000/001): OnColdStart failing throws (the agent must not start on a workspace
// that is not ready); OnMessage, OnStreamFinish and OnTerminate failures are logged and reported,
// never thrown. Emissions are queued, so the hooks of a source run in the order their points were
// reached (OnMessage → OnStreamFinish → OnTerminate) even when a caller does not await them.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { LifecycleCommands } from '../domain/template.js';
import { toTimestamp } from '../domain/time.js';
import type { ProcessGroups } from '../engine/processes.js';
import type { HookRunOutcome, HookSource, LifecycleLogEntry } from './log.js';
import { appendLifecycleLog, LifecycleLogQueue } from './log.js';
import { runHookCommand, tail } from './run-command.js';
import type { LifecycleBus, LifecycleEvent, LifecycleNotes, LifecyclePoint } from './types.js';

export type LifecycleBuiltin = (event: LifecycleEvent) => Promise<void>;
export type LifecycleBuiltins = Partial<Record<LifecyclePoint, LifecycleBuiltin>>;

export interface LifecycleBusOptions {
  /** atlas's defaults (recording, workspace restore); they run first. */
  builtins?: LifecycleBuiltins;
  /** The task's `lifecycle:` commands (from its template). */
  template?: LifecycleCommands;
  /** The configuration's `lifecycle` section. */
  config: { on_cold_start: string[]; on_message: string[]; on_stream_finish: string[]; on_terminate: string[]; timeout: number };
  groups: ProcessGroups;
  /** Failures are always noted (once per hook and point); with `verbose` every run is. */
  reporter?: LifecycleNotes;
  verbose?: boolean;
  /** Environment of hook commands (default: this process's). */
  env?: NodeJS.ProcessEnv;
  now?: () => Date;
  /** lifecycle.log's lines appended once per pass of the event loop, not one write per run (a server). */
  logPerPass?: boolean;
}

export const POINT_LABEL: Record<LifecyclePoint, string> = {
  on_cold_start: 'OnColdStart',
  on_message: 'OnMessage',
  on_stream_finish: 'OnStreamFinish',
  on_terminate: 'OnTerminate',
};

interface Run {
  hook: string;
  source: HookSource;
  outcome: HookRunOutcome;
  durationMs: number;
  exitCode?: number;
  error?: string;
  stderrTail?: string;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class LifecycleRunner implements LifecycleBus {
  /** Builtins still running; user commands queue behind each other: recording never waits for them. */
  private readonly builtins = new Set<Promise<void>>();
  private commandTail: Promise<unknown> = Promise.resolve();
  private readonly reported = new Set<string>();
  private readonly queue: LifecycleLogQueue | undefined;

  constructor(private readonly options: LifecycleBusOptions) {
    if (options.logPerPass) this.queue = new LifecycleLogQueue((error) => this.logFailed(error));
  }

  /** The hooks of a point in execution order: builtin, template commands, config commands. */
  hooksOf(point: LifecyclePoint): { hook: string; source: HookSource }[] {
    const list: { hook: string; source: HookSource }[] = [];
    if (this.options.builtins?.[point]) list.push({ hook: `builtin:${point}`, source: 'builtin' });
    for (const hook of this.options.template?.[point] ?? []) list.push({ hook, source: 'template' });
    for (const hook of this.options.config[point]) list.push({ hook, source: 'config' });
    return list;
  }

  coldStart(event: Extract<LifecycleEvent, { point: 'on_cold_start' }>): Promise<void> {
    return this.emit(event, true);
  }

  message(event: Extract<LifecycleEvent, { point: 'on_message' }>): Promise<void> {
    return this.emit(event, false);
  }

  streamFinish(event: Extract<LifecycleEvent, { point: 'on_stream_finish' }>): Promise<void> {
    return this.emit(event, false);
  }

  terminate(event: Extract<LifecycleEvent, { point: 'on_terminate' }>): Promise<void> {
    return this.emit(event, false);
  }

  /** Resolves when every emitted hook has run (and its line is in lifecycle.log). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.builtins, this.commandTail]);
    await this.queue?.flush();
  }

  /**
   * For each event: its builtin, then its commands (template's, then config's). A builtin is
   * called at once, synchronously up to its first await, so the recording defaults write each
   * message the moment it is emitted and never wait behind a user's hook; builtins are therefore
   * called in emission order. Commands run one at a time, in emission order, each event's after its
   * builtin. A critical failure rejects its own emission only: later ones still run.
   */
  private emit(event: LifecycleEvent, critical: boolean): Promise<void> {
    const hooks = this.hooksOf(event.point);
    const builtin = hooks.find((h) => h.source === 'builtin');
    const commands = hooks.filter((h) => h.source !== 'builtin');
    const builtinDone = builtin ? this.runOne(event, builtin, critical) : Promise.resolve();
    this.builtins.add(builtinDone);
    void builtinDone.catch(() => undefined).finally(() => this.builtins.delete(builtinDone));
    const all = Promise.all([builtinDone, this.commandTail]).then(async () => {
      for (const hook of commands) await this.runOne(event, hook, critical);
    });
    // Commands of the next event wait for these (a failed builtin here skips them: `all` rejects).
    this.commandTail = all.catch(() => undefined);
    return all;
  }

  private async runOne(event: LifecycleEvent, { hook, source }: { hook: string; source: HookSource }, critical: boolean): Promise<void> {
    const at = (this.options.now ?? (() => new Date()))();
    const run = source === 'builtin' ? await this.runBuiltin(event) : await this.runCommand(hook, event);
    const full: Run = { ...run, hook, source };
    this.log(event, full, at);
    this.show(event, full);
    if (full.outcome !== 'ok' && critical) throw this.criticalError(event, full);
  }

  private async runBuiltin(event: LifecycleEvent): Promise<Omit<Run, 'hook' | 'source'>> {
    const started = Date.now();
    try {
      await this.options.builtins![event.point]!(event);
      return { outcome: 'ok', durationMs: Date.now() - started };
    } catch (error) {
      const hint = error instanceof AtlasError && error.hint ? ` (${error.hint})` : '';
      return { outcome: 'failed', durationMs: Date.now() - started, error: `${errorText(error)}${hint}` };
    }
  }

  private async runCommand(command: string, event: LifecycleEvent): Promise<Omit<Run, 'hook' | 'source'>> {
    const result = await runHookCommand(command, event, {
      timeoutMs: this.options.config.timeout,
      groups: this.options.groups,
      env: this.options.env ?? process.env,
    });
    return {
      outcome: result.outcome,
      durationMs: result.durationMs,
      ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
      ...(result.stderrTail ? { stderrTail: result.stderrTail } : {}),
    };
  }

  private log(event: LifecycleEvent, run: Run, at: Date): void {
    const entry: LifecycleLogEntry = {
      at: toTimestamp(at),
      point: event.point,
      hook: run.hook,
      source: run.source,
      task_id: event.task_id,
      step_name: event.step_name,
      conversation_id: event.conversation_id,
      duration_ms: run.durationMs,
      outcome: run.outcome,
      ...(run.exitCode !== undefined && run.source !== 'builtin' ? { exit_code: run.exitCode } : {}),
      ...(run.error !== undefined ? { error: run.error } : {}),
      ...(run.stderrTail ? { stderr_tail: run.stderrTail } : {}),
    };
    if (this.queue) {
      this.queue.add(event.task_dir, entry);
      return;
    }
    try {
      appendLifecycleLog(event.task_dir, entry);
    } catch (error) {
      this.logFailed(error);
    }
  }

  private logFailed(error: unknown): void {
    // The log is evidence, not a precondition: a full disk must not stop the agent's work.
    this.options.reporter?.note(`could not write lifecycle.log: ${errorText(error)}`);
  }

  private show(event: LifecycleEvent, run: Run): void {
    const reporter = this.options.reporter;
    if (!reporter) return;
    const label = `${POINT_LABEL[event.point]} hook ${run.source === 'builtin' ? run.hook : `"${run.hook}" (${run.source})`}`;
    if (run.outcome === 'ok') {
      if (this.options.verbose) reporter.note(`${label}: ok (${run.durationMs} ms)`);
      return;
    }
    // A hook failing on every message would flood the output: once per hook, unless verbose.
    const key = `${event.point}\0${run.hook}`;
    if (!this.options.verbose && this.reported.has(key)) return;
    this.reported.add(key);
    const stderr = run.stderrTail ? `: ${tail(run.stderrTail, 200).replace(/\s*\n\s*/g, ' ⏎ ')}` : '';
    const more = this.options.verbose || event.point === 'on_cold_start' ? '' : ' (further failures of this hook: lifecycle.log)';
    reporter.note(`${label} ${run.outcome === 'timeout' ? 'timed out' : 'failed'}: ${run.error ?? 'unknown error'}${stderr}${more}`);
  }

  private criticalError(event: LifecycleEvent, run: Run): AtlasError {
    const what =
      run.source === 'builtin'
        ? `the builtin ${POINT_LABEL[event.point]} hook`
        : `${POINT_LABEL[event.point]} hook "${run.hook}" (${run.source})`;
    const stderr = run.stderrTail ? `; stderr: ${run.stderrTail}` : '';
    return new AtlasError(`${what} ${run.outcome === 'timeout' ? 'timed out' : 'failed'}: ${run.error ?? 'unknown error'}${stderr}`, {
      exitCode: EXIT.failure,
      hint:
        run.source === 'builtin'
          ? 'the workspace could not be prepared; fix the cause shown, then continue the task'
          : `fix the hook (its ${run.source === 'template' ? "template's lifecycle section" : 'lifecycle configuration'}), then continue the task; every run is in the task's lifecycle.log`,
    });
  }
}

export function createLifecycleBus(options: LifecycleBusOptions): LifecycleRunner {
  return new LifecycleRunner(options);
}

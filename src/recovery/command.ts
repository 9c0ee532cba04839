// `atlas recover [--task ID] [--action A] [--yes] [--json]` minus the runner: pick the task, load
// its repository's configuration, show the diagnosis, choose, recover, print the result. The CLI
// command passes `resume`, which builds the runner call for the task.
import type { Config } from '../config/schema.js';
import { EXIT } from '../domain/errors.js';
import type { Task } from '../domain/task.js';
import type { EntryDirective, TaskOutcome } from '../engine/contract.js';
import type { HookManager } from '../hook/manager.js';
import type { TaskRef } from '../store/task-store.js';
import { readTask } from '../store/task-store.js';
import type { SelectFn } from './choose-action.js';
import { actionFromFlags } from './choose-action.js';
import { recoverTask } from './recover.js';
import { renderDiagnosis, renderRecoveryResult } from './render.js';
import { selectTaskToRecover } from './select-task.js';

export interface RecoverFlags {
  task?: string;
  action?: string;
  yes?: boolean;
}

/** The little of CliContext.out this needs. */
export interface RecoverOutput {
  readonly json: boolean;
  line(text?: string): void;
  result(data: unknown, text: () => string): void;
}

export interface RecoverCommandDeps {
  home: string;
  cwd: string;
  out: RecoverOutput;
  /** A person can be asked: stdin and stdout are terminals and not --json. */
  interactive: boolean;
  /** Effective configuration for running the task (CliContext.config of its repository, its mode). */
  config: (task: Task, ref: TaskRef) => Promise<Config>;
  /** The hook manager for the task (CliContext.hookManager(ref, repoRoot)), so HOOK.md shows receipt status. */
  hookManager?: (ref: TaskRef, repoRoot: string) => Promise<HookManager>;
  /** Runs the task from an entry to its end: `(ref, config) => (entry) => runTask({ ref, config, entry, ... })`. */
  resume: (ref: TaskRef, config: Config) => (entry: EntryDirective) => Promise<TaskOutcome>;
  /** For tests: the prompt. */
  select?: SelectFn;
  /** See NO_OWNER_GRACE_MS; 0 for a task just fetched from a store (nothing here can be starting it). */
  graceMs?: number;
}

export async function runRecoverCommand(deps: RecoverCommandDeps, flags: RecoverFlags): Promise<number> {
  const { out } = deps;
  // Validate --action before anything is touched.
  const decision = actionFromFlags({
    interactive: deps.interactive,
    ...(flags.action !== undefined ? { action: flags.action } : {}),
    ...(flags.yes ? { yes: true } : {}),
    ...(deps.select ? { select: deps.select } : {}),
  });
  const ref = await selectTaskToRecover({
    home: deps.home,
    cwd: deps.cwd,
    interactive: deps.interactive,
    ...(flags.task !== undefined ? { taskId: flags.task } : {}),
    ...(deps.select ? { select: deps.select } : {}),
  });
  if (!ref) {
    out.result({ aborted: true, exit_code: EXIT.waiting }, () => 'Aborted; nothing was changed.');
    return EXIT.waiting;
  }
  const task = readTask(ref.dir);
  const repoRoot = task.repo_root;
  const config = await deps.config(task, ref);
  const manager = deps.hookManager ? await deps.hookManager(ref, repoRoot) : undefined;
  const result = await recoverTask({
    ref,
    config,
    resume: deps.resume(ref, config),
    ...decision,
    ...(manager ? { manager } : {}),
    ...(deps.graceMs !== undefined ? { graceMs: deps.graceMs } : {}),
    onDiagnosis: (d) => {
      out.line(renderDiagnosis(d));
      out.line();
    },
    log: (line) => out.line(line),
  });
  out.result(result, () => renderRecoveryResult(result));
  return result.exit_code;
}

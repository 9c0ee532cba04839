// atlas recover [--task ID] [--action A] [--yes] [--json]: the recovery flow (src/recovery/command.ts)
// with the task runner plugged in, so the task runs on to its end in this process.
import type { Config } from '../../config/schema.js';
import type { EntryDirective } from '../../engine/contract.js';
import { runTask } from '../../engine/run-task.js';
import { continuedTaskMode } from '../../engine/task-mode.js';
import { runRecoverCommand } from '../../recovery/command.js';
import type { TaskRef } from '../../store/task-store.js';
import type { CliContext } from '../context.js';
import { canPrompt } from '../interactive.js';
import { createReporter } from '../progress/create-reporter.js';
import { executionModeFlag, runSeams } from '../run-seams.js';

export interface RecoverOptions {
  task?: string;
  action?: string;
  yes?: boolean;
  /** `--from-store [TASK]`: true without a task id. */
  fromStore?: string | boolean;
  /** --sandbox / --local: execution.mode for this run. */
  sandbox?: boolean;
  local?: boolean;
}

export default async function recover(ctx: CliContext, opts: RecoverOptions): Promise<number> {
  if (opts.fromStore !== undefined) {
    // Fetch the task and its workspace from the store first; recovery then goes on as usual.
    const { fetchFromStoreForRecovery } = await import('./recover-from-store.js');
    opts = { ...opts, task: await fetchFromStoreForRecovery(ctx, opts.fromStore, opts.task) };
  }
  // The diagnosis is printed on stdout before the prompt, so --json (one document) never prompts.
  const interactive = canPrompt(undefined) && !ctx.out.json;
  const resume = (ref: TaskRef, config: Config) => async (entry: EntryDirective) => {
    // Created only now: a live TTY line must not be drawn while the diagnosis and prompt are shown.
    const reporter = createReporter({ json: ctx.out.json });
    try {
      return await runTask({ ref, config, reporter, interactive, entry, ...(await runSeams(ctx, config)) });
    } finally {
      reporter.close();
    }
  };
  return runRecoverCommand(
    {
      home: ctx.home,
      cwd: ctx.cwd,
      out: ctx.out,
      interactive,
      config: async (task, ref) => {
        const mode = await continuedTaskMode(ref.dir, task, executionModeFlag(opts), (line) => process.stderr.write(`atlas: ${line}\n`));
        return ctx.config(task.repo_root, { 'execution.mode': mode });
      },
      hookManager: (ref, repoRoot) => ctx.hookManager(ref, repoRoot),
      resume,
      ...(opts.fromStore !== undefined ? { graceMs: 0 } : {}),
    },
    opts,
  );
}

// atlas resume [--task ID] [--approve|--reject] [--note TEXT] [--no-interactive]
import { AtlasError, EXIT } from '../../domain/errors.js';
import { isTerminal } from '../../domain/hook-state.js';
import { checkResumeFlags, planResume } from '../../engine/resume-directive.js';
import { runTask } from '../../engine/run-task.js';
import { continuedTaskMode } from '../../engine/task-mode.js';
import { requireTask } from '../../hook/resolve-task.js';
import { checkLiveness, readOwner } from '../../liveness/owner.js';
import { readHookOfTask } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { CliContext } from '../context.js';
import { canPrompt } from '../interactive.js';
import { createReporter } from '../progress/create-reporter.js';
import { executionModeFlag, runSeams } from '../run-seams.js';

export default async function resume(
  ctx: CliContext,
  opts: { task?: string; approve?: boolean; reject?: boolean; note?: string; interactive?: boolean; sandbox?: boolean; local?: boolean },
): Promise<number> {
  checkResumeFlags(opts);
  const { ref, task } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home });
  const files = taskFiles(ref.dir);
  const hook = readHookOfTask(ref, task.steps);
  if (hook.state !== 'awaiting_human') {
    if (isTerminal(hook.state)) {
      throw new AtlasError(`task ${task.id} has ended (${hook.state}); there is nothing to resume`, {
        exitCode: EXIT.input,
        hint: 'start a new task with `atlas start`',
      });
    }
    const live = checkLiveness(readOwner(files.owner));
    if (live.status === 'alive' || live.status === 'remote') {
      throw new AtlasError(`task ${task.id} is running (process ${live.owner.pid} on ${live.owner.host}); it is not waiting`, {
        exitCode: EXIT.input,
        hint: '`atlas status` shows its progress',
      });
    }
    throw new AtlasError(`task ${task.id} is not waiting for a person: it stopped in ${hook.state} without its process`, {
      exitCode: EXIT.input,
      hint: `run \`atlas recover --task ${task.id}\` to diagnose and continue it`,
    });
  }
  const interactive = canPrompt(opts.interactive);
  const plan = planResume(hook, { ...opts, interactive });
  if (plan.kind === 'wait') {
    ctx.out.result({ task_id: task.id, state: hook.state, exit_code: EXIT.waiting, message: plan.message }, () => `atlas: ${plan.message}`);
    return EXIT.waiting;
  }
  const mode = await continuedTaskMode(ref.dir, task, executionModeFlag(opts), (line) => process.stderr.write(`atlas: ${line}\n`));
  const config = await ctx.config(task.repo_root, { 'execution.mode': mode });
  const reporter = createReporter({ json: ctx.out.json });
  process.stderr.write(`atlas: resuming ${task.id}: ${plan.what}\n`);
  const outcome = await runTask({ ref, config, reporter, interactive, entry: plan.entry, ...(await runSeams(ctx, config)) });
  reporter.close();
  if (ctx.out.json) {
    ctx.out.result(
      {
        task_id: task.id,
        state: outcome.state,
        exit_code: outcome.exitCode,
        message: outcome.message,
        ...(outcome.prompt ? { prompt: outcome.prompt } : {}),
        worktree: task.worktree,
        branch: task.branch,
      },
      () => outcome.message,
    );
  }
  return outcome.exitCode;
}

// atlas start <template> [description] [--in-place] [--workspace NAME] [--no-interactive] [--agent A] [--model M]
import { createTask } from '../../engine/create-task.js';
import { assertExecutionReady } from '../../engine/execution-mode.js';
import { initializeHome } from '../../engine/init-home.js';
import { runTask } from '../../engine/run-task.js';
import { locateWorktree } from '../../git/locate.js';
import { findCrashedTasks } from '../../recovery/detect.js';
import { crashedTasksWarning } from '../../recovery/render.js';
import { taskFiles } from '../../store/paths.js';
import { loadTemplate } from '../../templates/search.js';
import type { CliContext } from '../context.js';
import { canPrompt } from '../interactive.js';
import { createReporter } from '../progress/create-reporter.js';
import { executionModeFlag, runSeams } from '../run-seams.js';

export interface StartOptions {
  inPlace?: boolean;
  workspace?: string;
  interactive?: boolean;
  agent?: string;
  model?: string;
  /** --sandbox / --local: execution.mode for this run. */
  sandbox?: boolean;
  local?: boolean;
}

export default async function start(
  ctx: CliContext,
  templateName: string,
  description: string | undefined,
  opts: StartOptions,
): Promise<number> {
  const init = await initializeHome(ctx.home);
  if (init.created.length > 0) process.stderr.write(`atlas: set up ${ctx.home} (settings: ${ctx.home}/config.yaml)\n`);
  const repoRoot = locateWorktree(ctx.cwd)?.root;
  // A crashed task here is easy to forget once a new one starts: say so, and how to recover it.
  const crashed = repoRoot ? crashedTasksWarning(findCrashedTasks({ home: ctx.home, repoRoot })) : undefined;
  if (crashed) ctx.out.warn(crashed);
  const config = await ctx.config(repoRoot, { 'ai.agent': opts.agent, 'ai.model': opts.model, 'execution.mode': executionModeFlag(opts) });
  // Before anything is created: a setting atlas cannot honour, or a key it must refuse (wrong
  // permissions), stops the start here.
  await assertExecutionReady(config);
  await ctx.ensureSigningKey(config, (line) => process.stderr.write(`atlas: ${line}\n`));
  const { template } = await loadTemplate(templateName, { repoRoot, home: ctx.home, dirs: config.templates.dirs, cwd: ctx.cwd });
  const { ref, task } = await createTask({
    home: ctx.home,
    cwd: ctx.cwd,
    config,
    template,
    description: description ?? '',
    workspace: opts.workspace,
    inPlace: opts.inPlace,
    warn: (text) => ctx.out.warn(text),
    note: (text) => process.stderr.write(`atlas: ${text}\n`),
  });
  const reporter = createReporter({ json: ctx.out.json });
  const outcome = await runTask({
    ref,
    config,
    reporter,
    interactive: canPrompt(opts.interactive),
    entry: { kind: 'start' },
    ...(await runSeams(ctx, config)),
  });
  reporter.close();
  if (ctx.out.json) {
    ctx.out.result(
      {
        task_id: task.id,
        workspace: task.workspace_id,
        template: task.template,
        state: outcome.state,
        exit_code: outcome.exitCode,
        message: outcome.message,
        ...(outcome.prompt ? { prompt: outcome.prompt } : {}),
        worktree: task.worktree,
        branch: task.branch,
        hook: taskFiles(ref.dir).hook,
      },
      () => outcome.message,
    );
  }
  return outcome.exitCode;
}

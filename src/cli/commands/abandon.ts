// atlas abandon [--task ID] [--yes] [--note TEXT]
import { AtlasError, EXIT } from '../../domain/errors.js';
import { abandonTask, assertAbandonable } from '../../engine/abandon.js';
import { requireTask } from '../../hook/resolve-task.js';
import type { CliContext } from '../context.js';

export default async function abandon(ctx: CliContext, opts: { task?: string; yes?: boolean; note?: string }): Promise<number> {
  const { ref, task } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home });
  const manager = await ctx.hookManager(ref, task.repo_root);
  const hook = assertAbandonable(manager);
  if (!opts.yes && process.stdin.isTTY && process.stderr.isTTY) {
    const { confirm } = await import('@inquirer/prompts');
    let sure = false;
    try {
      sure = await confirm(
        { message: `Abandon ${task.id} (${hook.state}: ${task.description})? Its working tree is kept.`, default: false },
        { output: process.stderr },
      );
    } catch {
      sure = false;
    }
    if (!sure) throw new AtlasError('not abandoned', { exitCode: EXIT.input, hint: 'pass --yes to abandon without being asked' });
  }
  const config = await ctx.config(task.repo_root);
  const after = await abandonTask(manager, opts.note, async (hook) => {
    const { emitTerminate } = await import('../../lifecycle/standalone.js');
    const stepName = hook.history[hook.history.length - 1]?.step_name ?? null;
    await emitTerminate({ task, taskDir: ref.dir, config, reason: 'abandoned', stepName, verbose: Boolean(ctx.flags.verbose) });
  });
  const kept = task.in_place
    ? `its changes stay in your checkout ${task.worktree}`
    : `its working tree is kept at ${task.worktree} (branch ${task.branch}); remove it with: git -C ${task.repo_root} worktree remove ${task.worktree}`;
  ctx.out.result(
    { task_id: task.id, state: after.state, worktree: task.worktree, branch: task.branch, in_place: task.in_place },
    () => `task ${task.id} abandoned; ${kept}`,
  );
  return EXIT.ok;
}

// atlas hook checkpoints [--task ID]
import { EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { CliContext } from '../context.js';

export default async function hookCheckpoints(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const { ref } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const hook = readHookFile(taskFiles(ref.dir).hook);
  const newestFirst = [...hook.checkpoints].reverse();
  ctx.out.result({ task_id: hook.task_id, checkpoints: newestFirst }, () => {
    if (newestFirst.length === 0) return `${hook.task_id}: no checkpoints yet`;
    return newestFirst
      .map((c) => {
        const commit = c.git_commit ? c.git_commit.slice(0, 12) : '(no commit)';
        return `${c.created_at}  ${c.checkpoint_id}  ${c.trigger.padEnd(13)} ${c.step_name.padEnd(12)} ${commit}${c.git_dirty ? '*' : ' '}  ${c.description}`;
      })
      .join('\n');
  });
  return EXIT.ok;
}

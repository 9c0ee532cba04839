// atlas hook regenerate [--task ID]: rewrite HOOK.md from hook.json.
import { EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import type { CliContext } from '../context.js';

export default async function hookRegenerate(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const { ref, task } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const manager = await ctx.hookManager(ref, task.repo_root);
  await manager.regenerate();
  ctx.out.result({ task_id: ref.id, markdown: manager.files.hookMarkdown }, () => `rewrote ${manager.files.hookMarkdown}`);
  return EXIT.ok;
}

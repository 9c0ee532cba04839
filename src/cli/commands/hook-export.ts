// atlas hook export [--task ID]: the validated hook.json on stdout.
import { EXIT } from '../../domain/errors.js';
import { requireTask } from '../../hook/resolve-task.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { CliContext } from '../context.js';

export default async function hookExport(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const { ref } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  process.stdout.write(`${JSON.stringify(readHookFile(taskFiles(ref.dir).hook), null, 2)}\n`);
  return EXIT.ok;
}

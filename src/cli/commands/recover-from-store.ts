// The `--from-store [TASK]` part of `atlas recover`: fetch, say what arrived, hand back the task id.
import { AtlasError, EXIT } from '../../domain/errors.js';
import { renderStats } from '../../sync/report/render.js';
import { openStore } from '../../sync/stores/open-store.js';
import { fetchTaskFromStore } from '../../sync/transfer/fetch-task.js';
import type { CliContext } from '../context.js';

export async function fetchFromStoreForRecovery(ctx: CliContext, fromStore: string | boolean, task: string | undefined): Promise<string> {
  const wanted = typeof fromStore === 'string' ? fromStore : task;
  if (typeof fromStore === 'string' && task !== undefined && task !== fromStore) {
    throw new AtlasError(`--from-store ${fromStore} and --task ${task} name different tasks`, { exitCode: EXIT.input });
  }
  const config = await ctx.config();
  const store = await openStore(config, ctx.home);
  const fetched = await fetchTaskFromStore({
    home: ctx.home,
    cwd: ctx.cwd,
    config,
    store,
    warn: (t) => ctx.out.warn(t),
    ...(wanted !== undefined ? { taskId: wanted } : {}),
  });
  // Under --json, stdout stays one document (recovery's): the fetch is told on stderr.
  const tell = (line: string) => (ctx.out.json ? process.stderr.write(`${line}\n`) : ctx.out.line(line));
  tell(`fetched task ${fetched.task_id} (workspace ${fetched.workspace}) from ${store.location}`);
  tell(`  task folder  ${fetched.task_dir}: ${renderStats(fetched.task_stats, store.location).split('\n')[1]!.trim()}`);
  tell(`  worktree     ${fetched.worktree}: ${renderStats(fetched.workspace_stats, store.location).split('\n')[1]!.trim()}`);
  tell('');
  return fetched.task_id;
}

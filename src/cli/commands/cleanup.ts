// atlas cleanup [--dry-run] [--include-ignored]

import { cleanupTasks } from '../../cleanup/cleanup.js';
import { formatCleanupReport } from '../../cleanup/format.js';
import type { RetentionMs } from '../../cleanup/retention.js';
import { loadConfig } from '../../config/load.js';
import { EXIT } from '../../domain/errors.js';
import type { Task } from '../../domain/task.js';
import type { CliContext } from '../context.js';

export default async function cleanup(ctx: CliContext, opts: { dryRun?: boolean; includeIgnored?: boolean }): Promise<number> {
  const overrides = ctx.overrides();
  const warned = new Set<string>();
  // Each task keeps the retention of the repository it came from (its .atlas/config.yaml).
  const retentionFor = async (repoRoot: string): Promise<RetentionMs> => {
    const { config, warnings } = await loadConfig({ home: ctx.home, repoRoot, overrides });
    for (const w of warnings) {
      if (!warned.has(w)) ctx.out.warn(w);
      warned.add(w);
    }
    return config.hooks.retention;
  };
  // OnTerminate hooks of a task whose worktree goes, with its repository's lifecycle configuration.
  const onWorktreeRemoved = async (task: Task, taskDir: string, path: string): Promise<void> => {
    try {
      const { config } = await loadConfig({ home: ctx.home, repoRoot: task.repo_root, overrides });
      const { emitTerminate } = await import('../../lifecycle/standalone.js');
      await emitTerminate({ task, taskDir, config, reason: 'workspace_removed', workspace: path, verbose: Boolean(ctx.flags.verbose) });
    } catch (error) {
      ctx.out.warn(`task ${task.id}: OnTerminate hooks could not run: ${(error as Error).message}`);
    }
  };
  const report = await cleanupTasks({
    home: ctx.home,
    dryRun: Boolean(opts.dryRun),
    includeIgnored: Boolean(opts.includeIgnored),
    retentionFor,
    onWorktreeRemoved,
  });
  ctx.out.result(report, () => formatCleanupReport(report));
  return EXIT.ok;
}

// atlas checkpoint "desc" [--trigger T] [--task ID]
import type { CheckpointTrigger } from '../../domain/checkpoint.js';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { createCheckpoint, TaskEndedError } from '../../hook/checkpoint.js';
import { resolveTask } from '../../hook/resolve-task.js';
import type { CliContext } from '../context.js';

export default async function checkpoint(
  ctx: CliContext,
  description: string,
  opts: { trigger: CheckpointTrigger; task?: string; quiet?: boolean; commit?: string },
): Promise<number> {
  const commit = opts.commit?.trim().toLowerCase();
  if (commit !== undefined && !/^[0-9a-f]{4,64}$/.test(commit)) {
    throw new AtlasError(`--commit expects a commit sha (hex), got "${opts.commit}"`, {
      exitCode: EXIT.input,
      hint: 'pass the full sha, e.g. --commit "$(git rev-parse HEAD)"',
    });
  }
  const found = resolveTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, strict: true });
  if (!found) {
    if (opts.quiet) return EXIT.ok;
    throw new AtlasError('no running atlas task owns this directory or branch; nothing recorded', {
      exitCode: EXIT.notFound,
      hint: "pass --task ID (see `atlas status`), or run it inside the task's working tree",
    });
  }
  const manager = await ctx.hookManager(found.ref, found.task.repo_root);
  let created: Awaited<ReturnType<typeof createCheckpoint>>;
  try {
    // Without --task the checkpoint is for the running task: one that ended since is not it.
    created = await createCheckpoint(manager, {
      description,
      trigger: opts.trigger,
      requireLive: !opts.task,
      ...(commit ? { commit } : {}),
    });
  } catch (error) {
    if (!(error instanceof TaskEndedError)) throw error;
    if (opts.quiet) return EXIT.ok;
    throw new AtlasError(`${error.message}; nothing recorded`, {
      exitCode: EXIT.notFound,
      hint: `pass --task ${found.ref.id} to record it anyway`,
    });
  }
  if (opts.quiet) return EXIT.ok;
  ctx.out.result({ task_id: found.ref.id, checkpoint: created }, () =>
    [
      `${created.checkpoint_id}  ${found.ref.id}  step ${created.step_name || '-'}  (${created.trigger})`,
      `  ${created.git_branch}${created.git_commit ? ` @ ${created.git_commit.slice(0, 12)}` : ''}${created.git_dirty ? ', uncommitted changes' : ', clean'}` +
        `${created.files_snapshot ? `, ${created.files_snapshot.length} file${created.files_snapshot.length === 1 ? '' : 's'} snapshotted` : ''}`,
    ].join('\n'),
  );
  return EXIT.ok;
}

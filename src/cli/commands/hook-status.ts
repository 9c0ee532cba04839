// atlas hook status [--task ID]
import { formatDuration } from '../../domain/duration.js';
import { EXIT } from '../../domain/errors.js';
import { nextStepIndex } from '../../domain/hook.js';
import { requireTask } from '../../hook/resolve-task.js';
import { readHookFile } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { CliContext } from '../context.js';

function ago(ts: string, now: number): string {
  return `${formatDuration(Math.max(0, now - Date.parse(ts)))} ago`;
}

export default async function hookStatus(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const { ref, task } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const files = taskFiles(ref.dir);
  const hook = readHookFile(files.hook);
  const now = Date.now();
  const last = hook.checkpoints[hook.checkpoints.length - 1];
  const passed = hook.receipts.filter((r) => r.exit_code === 0).length;
  const data = {
    task_id: hook.task_id,
    workspace_id: hook.workspace_id,
    template: task.template,
    description: task.description,
    state: hook.state,
    updated_at: hook.updated_at,
    current_step: hook.current_step ?? null,
    next_step_index: nextStepIndex(hook),
    steps: task.steps.length,
    history_events: hook.history.length,
    checkpoints: hook.checkpoints.length,
    last_checkpoint: last ?? null,
    receipts: { total: hook.receipts.length, passed, failed: hook.receipts.length - passed },
    recovery: hook.recovery ?? null,
    worktree: task.worktree,
    branch: task.branch,
    files: { hook: files.hook, markdown: files.hookMarkdown },
  };
  ctx.out.result(data, () => {
    const lines = [
      `${hook.task_id}  ${task.template}: ${task.description}`,
      `  state        ${hook.state} (updated ${ago(hook.updated_at, now)})`,
    ];
    const step = hook.current_step;
    if (step) {
      lines.push(`  step         ${step.step_name} (${step.step_index + 1}/${task.steps.length}), attempt ${step.attempt}/${step.max_attempts}, started ${ago(step.started_at, now)}`);
      if (step.working_on) lines.push(`  working on   ${step.working_on}`);
      if (step.files_touched?.length) lines.push(`  files        ${step.files_touched.join(', ')}`);
    } else {
      lines.push(`  steps        ${Math.min(nextStepIndex(hook), task.steps.length)}/${task.steps.length} done`);
    }
    lines.push(
      `  checkpoints  ${hook.checkpoints.length}${last ? ` (latest ${last.checkpoint_id}, ${last.trigger}, ${ago(last.created_at, now)})` : ''}`,
      `  receipts     ${hook.receipts.length}${hook.receipts.length ? ` (${passed} passed, ${hook.receipts.length - passed} failed)` : ''}`,
    );
    if (hook.recovery) lines.push(`  recovery     ${hook.recovery.crash_type} crash; recommended ${hook.recovery.recommended_action}: ${hook.recovery.reason}`);
    lines.push(`  worktree     ${task.worktree} (${task.branch})`, `  brief        ${files.hookMarkdown}`);
    return lines.join('\n');
  });
  return EXIT.ok;
}

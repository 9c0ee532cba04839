// atlas hook status [--task ID]

import { existsSync } from 'node:fs';
import { conversationsDir } from '../../conversation/paths.js';
import { formatDuration } from '../../domain/duration.js';
import { EXIT } from '../../domain/errors.js';
import type { Hook } from '../../domain/hook.js';
import { nextStepIndex } from '../../domain/hook.js';
import { requireTask } from '../../hook/resolve-task.js';
import { readHookOfTask } from '../../store/hook-file.js';
import { taskFiles } from '../../store/paths.js';
import type { CliContext } from '../context.js';

function ago(ts: string, now: number): string {
  return `${formatDuration(Math.max(0, now - Date.parse(ts)))} ago`;
}

/**
 * hook.recovery stays in hook.json after recovery is over. Its advice matters only while the task
 * is being recovered or waits for a person's recovery decision (awaiting_human entered through
 * manual_recovery_required); otherwise it is history.
 */
function recoveryPending(hook: Hook): boolean {
  if (!hook.recovery) return false;
  if (hook.state === 'recovering') return true;
  if (hook.state !== 'awaiting_human') return false;
  const entered = [...hook.history].reverse().find((e) => e.to_state === 'awaiting_human' && e.from_state !== 'awaiting_human');
  return entered?.trigger === 'manual_recovery_required';
}

export default async function hookStatus(ctx: CliContext, opts: { task?: string }): Promise<number> {
  const { ref, task } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const files = taskFiles(ref.dir);
  const hook = readHookOfTask(ref, task.steps);
  const now = Date.now();
  const last = hook.checkpoints[hook.checkpoints.length - 1];
  const passed = hook.receipts.filter((r) => r.exit_code === 0).length;
  // Loaded only for a task with agent runs: `atlas hook status` must start fast (bench/core.mjs).
  const agents = existsSync(conversationsDir(ref.dir))
    ? (await import('../../conversation/hook-view.js')).usageSummary(ref.dir, hook, task, (text) => ctx.out.warn(text))
    : undefined;
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
    /** Tokens and cost of the task's agent runs (null: none recorded); null figures are unknown. */
    usage: agents?.json ?? null,
    recovery: hook.recovery ?? null,
    /** Whether hook.recovery's advice applies now (false: it records an earlier crash). */
    recovery_pending: recoveryPending(hook),
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
      lines.push(
        `  step         ${step.step_name} (${step.step_index + 1}/${task.steps.length}), attempt ${step.attempt}/${step.max_attempts}, started ${ago(step.started_at, now)}`,
      );
      if (step.working_on) lines.push(`  working on   ${step.working_on}`);
      if (step.files_touched?.length) lines.push(`  files        ${step.files_touched.join(', ')}`);
    } else {
      lines.push(`  steps        ${Math.min(nextStepIndex(hook), task.steps.length)}/${task.steps.length} done`);
    }
    lines.push(
      `  checkpoints  ${hook.checkpoints.length}${last ? ` (latest ${last.checkpoint_id}, ${last.trigger}, ${ago(last.created_at, now)})` : ''}`,
      `  receipts     ${hook.receipts.length}${hook.receipts.length ? ` (${passed} passed, ${hook.receipts.length - passed} failed)` : ''}`,
    );
    if (agents) lines.push(`  tokens       ${agents.line}`);
    if (hook.recovery && data.recovery_pending) {
      lines.push(
        `  recovery     ${hook.recovery.crash_type} crash; recommended ${hook.recovery.recommended_action}: ${hook.recovery.reason}`,
      );
      if (hook.state === 'awaiting_human') lines.push(`               continue with atlas recover --task ${hook.task_id}`);
    } else if (hook.recovery) {
      lines.push(`  last crash   ${hook.recovery.crash_type}, detected ${ago(hook.recovery.detected_at, now)} (recovery is over)`);
    }
    lines.push(`  worktree     ${task.worktree} (${task.branch})`, `  brief        ${files.hookMarkdown}`);
    return lines.join('\n');
  });
  return EXIT.ok;
}

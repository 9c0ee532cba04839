// Text for people: the diagnosis shown before choosing an action, the result after, the list of
// crashed tasks, and the warning `atlas start` prints. Pure string building (no prompts, no git),
// so `atlas status` and `atlas start` can load it cheaply.

import { formatDuration } from '../domain/duration.js';
import type { RecoveryAction } from '../domain/recovery-context.js';
import { describeSweep } from '../exec/sandbox/litter-text.js';
import type { ActionOption } from './actions.js';
import { actionOptions } from './actions.js';
import type { CrashedTask, PausedTask } from './detect.js';
import type { Diagnosis } from './diagnose.js';
import type { RecoveryResult } from './recover.js';

const WIDTH = 100;

function ago(ts: string, now: number): string {
  const ms = now - Date.parse(ts);
  return Number.isFinite(ms) ? `${formatDuration(Math.max(0, ms))} ago` : 'at an unknown time';
}

/** Word-wraps `text` to WIDTH columns after `first`; continuation lines start with `indent`. */
export function wrap(text: string, indent: string, first = ''): string {
  const words = text
    .replace(/\s+/g, ' ')
    .trim()
    .split(' ')
    .filter((w) => w.length > 0);
  const out: string[] = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      out.push(line);
      line = indent + word;
    } else {
      line = empty ? line + word : `${line} ${word}`;
    }
    empty = false;
  }
  out.push(line);
  return out.join('\n');
}

function row(label: string, value: string): string {
  const pad = `  ${label.padEnd(14)}`;
  return wrap(value, ' '.repeat(pad.length), pad);
}

function quoteOutput(text: string, indent: string): string[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const shown = lines.slice(-8);
  return [...(lines.length > shown.length ? [`${indent}│ …`] : []), ...shown.map((l) => `${indent}│ ${l}`)];
}

/** Headline of what happened to the task. */
function headline(d: Diagnosis): string {
  const id = d.ref.id;
  if (d.kind === 'paused') {
    if (d.pausedBy === 'interrupted') return `Task ${id} was interrupted (Ctrl+C or SIGTERM) and is waiting in awaiting_human.`;
    if (d.pausedBy === 'manual_recovery_required') return `Task ${id} is waiting for a recovery decision after a crash.`;
    return `Task ${id} is waiting in awaiting_human${d.pausedBy ? ` (${d.pausedBy})` : ''}.`;
  }
  return d.fresh ? `Task ${id} crashed.` : `Task ${id} crashed; an earlier recovery did not finish (its diagnosis is reused).`;
}

/** Everything a person needs to choose an action. */
export function renderDiagnosis(d: Diagnosis, now = Date.now()): string {
  const r = d.recovery;
  const task = d.task;
  const lines = [headline(d), ''];
  lines.push(row('Task', `${task.template}: ${task.description}`));
  const cause =
    d.kind === 'paused' && d.pausedBy === 'interrupted'
      ? 'stopped by a signal from the terminal or the system'
      : `${d.livenessReason} (crash type: ${r.crash_type})`;
  lines.push(row('What happened', cause));
  lines.push(
    row(
      'When',
      `last sign of life ${d.lastSeenAt} (${ago(d.lastSeenAt, now)}); ${d.kind === 'paused' ? 'diagnosed' : 'crash detected'} ${r.detected_at}`,
    ),
  );
  if (d.stoppedProcesses.length > 0) {
    const n = d.stoppedProcesses.length;
    lines.push(
      row(
        'Left running',
        `stopped ${n} process group${n === 1 ? '' : 's'} the crashed run had started (pid ${d.stoppedProcesses.join(', ')}), so nothing else changes the tree`,
      ),
    );
  }
  if (d.sandboxLitter)
    lines.push(row('Sandbox litter', `removed ${describeSweep(d.sandboxLitter, d.task.worktree) || 'nothing (none was left)'}`));
  lines.push(row('State', `${r.last_known_state}${r.last_known_state !== d.hook.state ? ` (now ${d.hook.state})` : ''}`));
  const pos = d.position;
  if (pos.kind === 'in_step') {
    const s = pos.step;
    const type = pos.definition ? `, ${pos.definition.type}` : '';
    lines.push(
      row(
        'Step',
        `${s.step_name} (step ${s.step_index + 1} of ${task.steps.length}${type}), attempt ${s.attempt}/${s.max_attempts}, started ${s.started_at} (${ago(s.started_at, now)})`,
      ),
    );
    if (s.working_on && !r.was_validating) lines.push(row('Working on', s.working_on));
    if (r.was_validating) lines.push(row('Validating', r.validation_cmd ?? '(command not recorded)'));
    if (s.files_touched && s.files_touched.length > 0) lines.push(row('Files touched', s.files_touched.join(', ')));
  } else {
    const next = task.steps[pos.next];
    lines.push(
      row(
        'Step',
        next
          ? `none running; next is ${next.name} (step ${pos.next + 1} of ${task.steps.length})`
          : `none running; all ${task.steps.length} steps done`,
      ),
    );
  }
  if (r.partial_output) {
    lines.push('  Last output');
    lines.push(...quoteOutput(r.partial_output, '    '));
  }
  const c = d.checkpoint;
  if (c) {
    const commit = c.git_commit ? `commit ${c.git_commit.slice(0, 12)}${c.git_dirty ? ' + uncommitted changes' : ''}` : 'no commit';
    lines.push(
      row(
        'Checkpoint',
        `${c.checkpoint_id} (${c.trigger}, ${c.created_at}, ${ago(c.created_at, now)}): "${c.description}", step ${c.step_name || c.step_index + 1}, ${commit}`,
      ),
    );
  } else if (r.last_checkpoint_id) {
    lines.push(row('Checkpoint', `${r.last_checkpoint_id} (no commit to return to)`));
  } else {
    lines.push(row('Checkpoint', 'none'));
  }
  lines.push(row('Working tree', `${task.worktree} (branch ${task.branch})`));
  lines.push('');
  lines.push(wrap(r.reason, '  ', `Recommended: ${r.recommended_action}. `));
  lines.push('');
  lines.push('Actions:');
  for (const o of optionsOf(d)) {
    const mark = o.action === r.recommended_action ? '▸' : ' ';
    const label = `${mark} ${o.action.padEnd(22)}`;
    lines.push(wrap(o.unavailable ? `not available: ${o.unavailable}` : o.effect, ' '.repeat(label.length + 2), `  ${label}`));
  }
  lines.push(wrap(`leave the task as it is (it stays in ${d.hook.state})`, ' '.repeat(28), `    ${'abort'.padEnd(22)}`));
  lines.push('');
  lines.push(
    wrap(
      `Saved work: before retry_from_checkpoint resets the tree, every uncommitted change is committed on a new branch atlas/recovery/${d.ref.id}/<YYYYMMDD-HHMMSS> in ${task.worktree}; nothing is deleted. The other actions leave the tree as it is.`,
      '  ',
    ),
  );
  return lines.join('\n');
}

export function optionsOf(d: Diagnosis): ActionOption[] {
  return actionOptions({ taskId: d.ref.id, position: d.position, checkpoint: d.checkpoint, stepNames: d.task.steps.map((s) => s.name) });
}

function actionPhrase(action: RecoveryAction): string {
  switch (action) {
    case 'retry_step':
      return 'retried the step';
    case 'retry_from_checkpoint':
      return 'retried the step from a checkpoint';
    case 'skip_step':
      return 'skipped the step';
    case 'manual':
      return 'left the task for a person';
  }
}

/** After recovery: what was done, where saved work went, how the run ended. */
export function renderRecoveryResult(result: RecoveryResult): string {
  const lines: string[] = [];
  if (result.action === null) return result.message;
  const how = result.entry?.kind === 'continue' ? 'continued the task' : actionPhrase(result.action);
  lines.push(`Recovery of ${result.task_id}: ${result.action} (${result.action_source}) — ${how}.`);
  const saved = result.saved_work;
  if (saved) {
    lines.push(
      saved.saved
        ? `  Saved work     branch ${saved.branch} (commit ${saved.commit.slice(0, 12)}), ${saved.files.length} changed path${saved.files.length === 1 ? '' : 's'}`
        : `  Saved work     nothing to save (${saved.message})`,
    );
    if (saved.saved)
      lines.push(`  Get it back    git -C ${result.worktree} checkout ${saved.branch} -- .   (or: git switch ${saved.branch})`);
  }
  if (result.reset_to)
    lines.push(`  Reset to       checkpoint ${result.reset_to.checkpoint_id} (commit ${result.reset_to.commit.slice(0, 12)})`);
  if (result.outcome) lines.push(`  Outcome        ${result.outcome.state}: ${result.outcome.message}`);
  else lines.push(wrap(result.message, '                 ', '  Next           '));
  return lines.join('\n');
}

function stepOf(t: CrashedTask | PausedTask): string {
  const s = t.hook.current_step;
  return s ? `${s.step_name} (attempt ${s.attempt}/${s.max_attempts})` : 'between steps';
}

/** One line per task, for the chooser and for `atlas recover` without --task in a script. */
export function describeRecoverable(t: CrashedTask | PausedTask): string {
  const what = t.condition === 'crashed' ? `crashed (${t.crashType}: ${t.reason})` : 'interrupted, waiting';
  const desc = t.task ? ` ${t.task.template}: ${t.task.description}` : '';
  return `${t.ref.id}${desc} — ${t.hook.state}, ${stepOf(t)}, ${what}`;
}

export function renderRecoverableList(tasks: readonly (CrashedTask | PausedTask)[]): string {
  return [
    `${tasks.length} tasks need recovery:`,
    ...tasks.map((t) => `  ${describeRecoverable(t)}`),
    `Recover one with: atlas recover --task ${tasks[0]?.ref.id ?? 'ID'}`,
  ].join('\n');
}

/** The warning `atlas start` prints when the repository has crashed tasks. */
export function crashedTasksWarning(tasks: readonly CrashedTask[]): string | undefined {
  if (tasks.length === 0) return undefined;
  if (tasks.length === 1) {
    const t = tasks[0]!;
    if (t.ownerStillRunning && t.liveness.status === 'stale') {
      const pid = t.liveness.owner.pid;
      return `task ${t.ref.id} in this repository is not responding (pid ${pid}; ${t.reason}); stop it (kill ${pid}), then \`atlas recover --task ${t.ref.id}\``;
    }
    return `task ${t.ref.id} in this repository crashed (${t.crashType}: ${t.reason}); recover it with \`atlas recover --task ${t.ref.id}\``;
  }
  return `${tasks.length} tasks in this repository crashed (${tasks.map((t) => t.ref.id).join(', ')}); recover one with \`atlas recover --task ${tasks[0]!.ref.id}\``;
}

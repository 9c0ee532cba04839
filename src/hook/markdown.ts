// HOOK.md: the recovery brief a person or a fresh AI session reads to carry on. Pure and total:
// the same hook, task and clock give the same text, and no content can make it throw.
import { formatDuration } from '../domain/duration.js';
import type { Hook } from '../domain/hook.js';
import { nextStepIndex } from '../domain/hook.js';
import { isTerminal } from '../domain/hook-state.js';
import type { Task } from '../domain/task.js';

export interface MarkdownInput {
  hook: Hook;
  task?: Task;
  now: Date;
  /** One status per receipt (e.g. "✓ verified", "✗ bad signature"); absent: not checked here. */
  receiptStatuses?: string[];
  maxCheckpoints?: number;
}

/** The input plus what is derived from history once (history may hold thousands of events). */
interface View extends MarkdownInput {
  next: number;
}

const RECENT_HISTORY = 20;
const TIMELINE = 15;

/** Text safe inside a table cell: one line, pipes escaped, bounded length. */
function cell(value: unknown, max = 120): string {
  const text = String(value ?? '')
    .replace(/\r?\n|\r/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Inline code that survives backticks in the value. */
function code(value: string): string {
  const clean = value.replace(/\r?\n|\r/g, ' ');
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((m) => m.length));
  const fence = '`'.repeat(longest + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/** A fenced block whose fence is longer than any run of tildes inside. */
function block(text: string): string {
  const longest = Math.max(2, ...(text.match(/~+/g) ?? []).map((m) => m.length));
  const fence = '~'.repeat(longest + 1);
  return `${fence}text\n${text}\n${fence}`;
}

function ago(from: string, now: Date): string {
  const ms = now.getTime() - Date.parse(from);
  return Number.isFinite(ms) ? `${formatDuration(Math.max(0, ms))} ago` : 'unknown';
}

function stepLabel(task: Task | undefined, index: number): string {
  const name = task?.steps[index]?.name;
  return name ? `${name} (step ${index + 1}${task ? ` of ${task.steps.length}` : ''})` : `step ${index + 1}`;
}

function summary(input: View): string[] {
  const { hook, task, now } = input;
  const since = [...hook.history].reverse().find((e) => e.to_state === hook.state && e.from_state !== e.to_state);
  const rows: [string, string][] = [
    ['Task', code(hook.task_id)],
    ['Workspace', cell(hook.workspace_id)],
  ];
  if (task) {
    rows.push(['Template', cell(task.template)]);
    rows.push(['Description', cell(task.description, 200)]);
    rows.push(['Working tree', code(task.worktree)]);
    rows.push(['Branch', code(task.branch)]);
  }
  rows.push(['State', `**${hook.state}**${since ? ` since ${since.timestamp} (${ago(since.timestamp, now)})` : ''}`]);
  rows.push(['Updated', `${hook.updated_at} (${ago(hook.updated_at, now)})`]);
  return ['| | |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)];
}

function currentStep(input: View): string[] {
  const { hook, task } = input;
  const step = hook.current_step;
  if (!step) {
    if (isTerminal(hook.state)) return ['No step is active: the task has ended.'];
    const next = input.next;
    if (task && next < task.steps.length) return [`No step is active. Next to run: **${cell(stepLabel(task, next))}**.`];
    return ['No step is active.'];
  }
  const lines = [
    `**${cell(step.step_name)}** (step ${step.step_index + 1}${task ? ` of ${task.steps.length}` : ''}, attempt ${step.attempt}/${step.max_attempts}), started ${step.started_at} (${ago(step.started_at, input.now)})`,
    '',
    `- Working on: ${step.working_on ? cell(step.working_on, 300) : '(not described)'}`,
    `- Files touched: ${step.files_touched && step.files_touched.length > 0 ? step.files_touched.map(code).join(', ') : 'none recorded'}`,
  ];
  if (step.current_checkpoint_id) lines.push(`- Latest checkpoint: ${code(step.current_checkpoint_id)}`);
  lines.push('', 'Last output:', '', step.last_output ? block(step.last_output) : '(none yet)');
  return lines;
}

function whatToDo(input: View): string[] {
  const { hook } = input;
  const id = hook.task_id;
  const r = hook.recovery;
  if (r && hook.state === 'recovering') {
    const lines = [
      `A crash was detected at ${r.detected_at} (${r.crash_type}). The task was in **${r.last_known_state}**` +
        (hook.current_step ? ` during step **${cell(hook.current_step.step_name)}**` : '') + '.',
    ];
    if (r.was_validating) lines.push(`It was validating${r.validation_cmd ? `: ${code(r.validation_cmd)}` : ''}.`);
    lines.push(
      '',
      `Recommended action: **${r.recommended_action}** — ${cell(r.reason, 400)}`,
    );
    if (r.last_checkpoint_id) lines.push(`Last checkpoint: ${code(r.last_checkpoint_id)}.`);
    if (r.partial_output) lines.push('', 'Output before the crash:', '', block(r.partial_output));
    lines.push(
      '',
      `- **For a person:** run ${code(`atlas recover --task ${id}`)} to see the diagnosis and choose; ${code(`atlas recover --task ${id} --yes`)} takes the recommendation.`,
      `- **For an AI session:** do not redo finished steps. Read the current step and its last output above, check ${code('git status')} in the working tree, then continue the step from where the output stops; record progress with ${code(`atlas checkpoint "what you did" --task ${id}`)}.`,
    );
    return lines;
  }
  switch (hook.state) {
    case 'initializing':
    case 'step_pending':
    case 'step_running':
    case 'step_validating':
      return [
        `The task is in progress. If its process is no longer running, run ${code(`atlas recover --task ${id}`)}.`,
        `An AI session helping here should record progress with ${code(`atlas checkpoint "what you did" --task ${id}`)}.`,
      ];
    case 'awaiting_human':
      return [
        'The task is waiting for a person' + (r ? ` (after a crash: ${cell(r.reason, 300)})` : '') + '.',
        `Review the working tree, then run ${code(`atlas resume --task ${id}`)} to continue (or ${code(`atlas recover --task ${id}`)} after a crash), or ${code(`atlas abandon --task ${id}`)} to stop.`,
      ];
    case 'recovering':
      return [`Recovery is under way. Run ${code(`atlas recover --task ${id}`)} to continue it.`];
    case 'completed':
      return ['The task completed. Nothing to do.'];
    case 'failed':
      return [`The task failed. Read the recent history below, fix the cause, and start a new task (or ${code(`atlas recover --task ${id} --action retry_step`)} where allowed).`];
    case 'abandoned':
      return ['The task was abandoned. Nothing to do.'];
  }
}

function doNot(input: View): string[] {
  const { hook, task } = input;
  const done = input.next;
  const lines = [
    `- Do not edit ${code('hook.json')} by hand: use atlas commands, which lock it and keep its history.`,
    `- Do not edit this file: it is rewritten from hook.json on every change (${code(`atlas hook regenerate --task ${hook.task_id}`)}).`,
    '- Do not claim validation passed without a signed receipt: only receipts count.',
  ];
  if (task) {
    lines.push(`- Do not reset, rebase or force-push ${code(task.branch)} while the task is live: checkpoints refer to its commits.`);
    lines.push(`- Do not delete ${code(task.worktree)} or discard its uncommitted changes.`);
    if (done > 0) {
      const names = task.steps.slice(0, done).map((s) => s.name);
      lines.push(`- Do not redo finished steps: ${names.map(code).join(', ')}.`);
    }
  }
  return lines;
}

function steps(input: View): string[] {
  const { hook, task } = input;
  if (!task || task.steps.length === 0) return [];
  const next = input.next;
  const rows = task.steps.map((s, i) => {
    let status = i < next ? 'done' : 'pending';
    if (hook.current_step?.step_index === i && !isTerminal(hook.state)) status = `**${hook.state}**`;
    if (i >= next && hook.state === 'completed') status = 'done';
    return `| ${i + 1} | ${cell(s.name)} | ${s.type} | ${status} |`;
  });
  return ['## Steps', '', '| # | Step | Type | Status |', '|---|---|---|---|', ...rows, ''];
}

function receipts(input: View): string[] {
  const list = input.hook.receipts;
  if (list.length === 0) return ['No validation receipts yet.'];
  const rows = list.map((r, i) => {
    const status = input.receiptStatuses?.[i] ?? 'not checked';
    return `| ${code(r.receipt_id)} | ${cell(r.step_name)} | ${code(cell(r.command, 80))} | ${r.exit_code} | ${cell(r.duration)} | ${cell(status)} |`;
  });
  return ['| Receipt | Step | Command | Exit | Duration | Verification |', '|---|---|---|---|---|---|', ...rows];
}

function timeline(input: View): string[] {
  const list = input.hook.checkpoints;
  if (list.length === 0) return ['No checkpoints yet.'];
  const shown = list.slice(-TIMELINE).reverse();
  const rows = shown.map(
    (c) =>
      `| ${c.created_at} | ${code(c.checkpoint_id)} | ${cell(c.step_name)} | ${c.trigger} | ${c.git_commit ? code(c.git_commit.slice(0, 12)) : '—'} | ${c.git_dirty ? 'yes' : 'no'} | ${cell(c.description, 100)} |`,
  );
  const head = `${list.length} checkpoint${list.length === 1 ? '' : 's'}${input.maxCheckpoints ? ` (at most ${input.maxCheckpoints} kept)` : ''}, newest first${list.length > TIMELINE ? `, ${TIMELINE} shown` : ''}.`;
  return [head, '', '| Time | Checkpoint | Step | Trigger | Commit | Dirty | Description |', '|---|---|---|---|---|---|---|', ...rows];
}

function history(input: View): string[] {
  const list = input.hook.history;
  const shown = list.slice(-RECENT_HISTORY);
  const rows = shown.map(
    (e) => `| ${e.timestamp} | ${e.from_state || '—'} → ${e.to_state || '—'} | ${cell(e.trigger)} | ${cell(e.step_name ?? '')} |`,
  );
  return [
    `Last ${shown.length} of ${list.length} event${list.length === 1 ? '' : 's'}, oldest first.`,
    '',
    '| Time | State | Trigger | Step |',
    '|---|---|---|---|',
    ...rows,
  ];
}

function troubleshooting(input: View): string[] {
  const id = input.hook.task_id;
  return [
    `- ${code(`atlas hook status --task ${id}`)}: state, step and liveness at a glance`,
    `- ${code(`atlas hook checkpoints --task ${id}`)}: every checkpoint with its commit`,
    `- ${code(`atlas recover --task ${id}`)}: diagnose a crash and resume`,
    `- ${code(`atlas verify ${id}`)}: check this task's receipts`,
    `- ${code(`atlas hook export --task ${id}`)}: hook.json for a bug report`,
    `- ${code(`atlas hook regenerate --task ${id}`)}: rewrite this file from hook.json`,
  ];
}

export function renderHookMarkdown(markdownInput: MarkdownInput): string {
  const input: View = { ...markdownInput, next: nextStepIndex(markdownInput.hook) };
  const { hook } = input;
  const parts = [
    `# Hook: ${hook.task_id}`,
    '',
    '> Recovery brief for this task, rewritten by atlas on every change to hook.json.',
    '> A person or a fresh AI session reads it to carry on where the task stopped.',
    '',
    ...summary(input),
    '',
    '## Current step',
    '',
    ...currentStep(input),
    '',
    '## What to do now',
    '',
    ...whatToDo(input),
    '',
    '## Do not',
    '',
    ...doNot(input),
    '',
    ...steps(input),
    '## Validation receipts',
    '',
    ...receipts(input),
    '',
    '## Checkpoints',
    '',
    ...timeline(input),
    '',
    '## Recent history',
    '',
    ...history(input),
    '',
    '## Troubleshooting',
    '',
    ...troubleshooting(input),
    '',
  ];
  return parts.join('\n');
}

// HOOK.md: the recovery brief a person or a fresh AI session reads to carry on. Pure and total:
// the same hook, task and clock give the same text, and no content can make it throw.

import type { ConversationView } from '../conversation/hook-view.js';
import { formatDuration } from '../domain/duration.js';
import type { Hook, HookEvent } from '../domain/hook.js';
import { nextStepIndex, stepExecutionMode } from '../domain/hook.js';
import { isTerminal } from '../domain/hook-state.js';
import { stepPosition } from '../domain/recovery-rules.js';
import type { Task } from '../domain/task.js';
import { lastMessages, usageCells } from './markdown-conversations.js';

export interface MarkdownInput {
  hook: Hook;
  task?: Task;
  now: Date;
  /** One status per receipt (e.g. "✓ verified", "✗ bad signature"); absent: not checked here. */
  receiptStatuses?: string[];
  maxCheckpoints?: number;
  /** The task's agent conversations (tokens per step, last messages); absent: none recorded. */
  conversations?: ConversationView;
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

/** The most recent event with this trigger, if any. */
function lastEvent(hook: Hook, trigger: string): HookEvent | undefined {
  for (let i = hook.history.length - 1; i >= 0; i--) if (hook.history[i]!.trigger === trigger) return hook.history[i];
  return undefined;
}

/** How the hook entered its current state. */
function enteredBy(hook: Hook): HookEvent | undefined {
  return [...hook.history].reverse().find((e) => e.to_state === hook.state && e.from_state !== e.to_state);
}

const ACTION_EFFECTS: Record<string, string> = {
  retry_step: 'run the step again on the working tree as it is (an agent step resumes its session with a note)',
  retry_from_checkpoint:
    "save every uncommitted change on an `atlas/recovery/...` branch, reset the tree to the checkpoint's commit, run the step again from there",
  skip_step: 'record the step complete without running it again and go on',
  manual: 'leave the task waiting for a person (awaiting_human)',
};

function aiAdvice(r: NonNullable<Hook['recovery']>, input: MarkdownInput): string {
  const { hook, task } = input;
  const id = hook.task_id;
  const pos = stepPosition(hook, task?.steps ?? []);
  const nextName = pos.kind === 'between' ? task?.steps[pos.next]?.name : undefined;
  const step =
    pos.kind === 'in_step'
      ? `step **${cell(pos.step.step_name)}**`
      : nextName !== undefined
        ? `the next step, **${cell(nextName)}**`
        : 'the next step';
  switch (r.recommended_action) {
    case 'skip_step':
      return `the evidence says ${step} finished its work; do not redo it. Check ${code('git log -3')} and ${code('git status')} agree, then let a person run ${code(`atlas recover --task ${id} --yes`)}.`;
    case 'retry_from_checkpoint': {
      const crash = lastEvent(hook, 'crash_detected');
      const since = crash ? hook.history.slice(hook.history.lastIndexOf(crash) + 1) : [];
      const restored = since.find((e) => e.trigger === 'checkpoint_restored');
      const saved = since.find((e) => e.trigger === 'work_saved');
      if (restored) {
        return `the tree was reset to checkpoint ${code(String(restored.details?.['checkpoint_id'] ?? '?'))}${saved ? ` and the changes made after it are on branch ${code(String(saved.details?.['branch'] ?? '?'))}` : ''}; redo ${step} from there, reusing saved changes where they are right.`;
      }
      return `recovery will reset the tree to checkpoint ${code(r.last_checkpoint_id ?? '?')} and save later changes on an ${code('atlas/recovery/...')} branch; redo ${step} from that checkpoint, reusing the saved changes where they are right (${code('git diff HEAD <branch>')}).`;
    }
    case 'manual':
      return `do not guess: ${step} was cut off and atlas cannot tell how far it got. Compare the step's goal with ${code('git status')} and ${code('git diff')}, report what is done and what is missing, and let a person choose the action.`;
    default:
      return pos.kind === 'in_step'
        ? `${step} will run again on the current tree. Check ${code('git status')} and ${code('git diff')} first, do not redo what is already there, continue from where the last output stops, and record progress with ${code(`atlas checkpoint "what you did" --task ${id}`)}.`
        : `no step was cut off; the task continues with ${step}. Do not redo finished steps.`;
  }
}

function afterRecovery(hook: Hook): string[] {
  // The current step is running again after a crash when no step finished since the diagnosis.
  const crash = lastEvent(hook, 'crash_detected');
  const r = hook.recovery;
  if (!crash || !r || !hook.current_step) return [];
  const since = hook.history.slice(hook.history.lastIndexOf(crash) + 1);
  if (since.some((e) => e.trigger === 'step_complete' || e.trigger === 'step_skipped')) return [];
  const restored = [...since].reverse().find((e) => e.trigger === 'checkpoint_restored');
  const saved = [...since].reverse().find((e) => e.trigger === 'work_saved');
  const lines = [
    '',
    `This step is running again after a crash at ${r.detected_at} (${r.crash_type}).` +
      (restored
        ? ` The working tree was reset to checkpoint ${code(String(restored.details?.['checkpoint_id'] ?? '?'))}` +
          (saved ? `; the changes made after it are on branch ${code(String(saved.details?.['branch'] ?? '?'))}.` : '.')
        : ' The working tree keeps what the interrupted attempt changed: check `git status` and `git diff` before redoing anything.'),
  ];
  return lines;
}

function whatToDo(input: View): string[] {
  const { hook } = input;
  const id = hook.task_id;
  const r = hook.recovery;
  if (r && hook.state === 'recovering') {
    const crash = lastEvent(hook, 'crash_detected');
    const why = typeof crash?.details?.['liveness'] === 'string' ? `: ${cell(crash.details['liveness'], 200)}` : '';
    const pos = stepPosition(hook, input.task?.steps ?? []);
    const lines = [
      `A crash was detected at ${r.detected_at} (${r.crash_type}${why}). The task was in **${r.last_known_state}**` +
        (pos.kind === 'in_step'
          ? ` during step **${cell(pos.step.step_name)}** (attempt ${pos.step.attempt}/${pos.step.max_attempts})`
          : ', between steps') +
        '.',
    ];
    if (r.was_validating) lines.push(`It was validating${r.validation_cmd ? `: ${code(r.validation_cmd)}` : ''}.`);
    lines.push('', `Recommended action: **${r.recommended_action}** — ${cell(r.reason, 600)}`);
    if (r.last_checkpoint_id) lines.push(`Last checkpoint: ${code(r.last_checkpoint_id)}.`);
    if (r.partial_output) lines.push('', 'Output before the crash:', '', block(r.partial_output));
    lines.push('', 'Actions:', ...Object.entries(ACTION_EFFECTS).map(([a, e]) => `- ${code(a)}: ${e}`));
    lines.push(
      '',
      `- **For a person:** run ${code(`atlas recover --task ${id}`)} to see the diagnosis and choose; ${code(`atlas recover --task ${id} --yes`)} takes the recommendation; ${code(`atlas recover --task ${id} --action <action>`)} takes another.`,
      `- **For an AI session:** ${aiAdvice(r, input)}`,
    );
    return lines;
  }
  const entered = enteredBy(hook);
  switch (hook.state) {
    case 'initializing':
    case 'step_pending':
    case 'step_running':
    case 'step_validating':
      return [
        `The task is in progress. If its process is no longer running, run ${code(`atlas recover --task ${id}`)}.`,
        `An AI session helping here should record progress with ${code(`atlas checkpoint "what you did" --task ${id}`)}.`,
        ...afterRecovery(hook),
      ];
    case 'awaiting_human':
      if (entered?.trigger === 'manual_recovery_required') {
        return [
          `A crash cut off ${hook.current_step ? `step **${cell(hook.current_step.step_name)}**` : 'the task'} and a person has to decide how to go on.`,
          ...(r ? ['', `Diagnosis: ${cell(r.reason, 600)}`] : []),
          '',
          `- **For a person:** inspect the working tree (${code('git status')}, ${code('git diff')}), then run ${code(`atlas recover --task ${id} --action retry_step`)} (run the step again on this tree) or ${code('--action skip_step')} (its work is done)` +
            (hook.checkpoints.some((c) => c.git_commit)
              ? `, or ${code('--action retry_from_checkpoint')} (reset to the last checkpoint; uncommitted changes are saved on a branch first).`
              : '.'),
          `- **For an AI session:** do not continue the step on your own. Compare its goal with ${code('git status')} and ${code('git diff')}, report what is done and what is missing, and leave the choice to a person.`,
        ];
      }
      if (entered?.trigger === 'interrupted') {
        return [
          `The task was interrupted (Ctrl+C or SIGTERM)${hook.current_step ? ` during step **${cell(hook.current_step.step_name)}**` : ''}${entered.details?.['reason'] ? `: ${cell(entered.details['reason'], 200)}` : ''}.`,
          `Run ${code(`atlas recover --task ${id}`)} to continue it (it shows what was cut off, recommends how to go on and asks), ` +
            `or ${code(`atlas resume --task ${id}`)} to run the interrupted step again at once (${code('--approve')} accepts it as done), or ${code(`atlas abandon --task ${id}`)} to stop.`,
        ];
      }
      return [
        `The task is waiting for a person${entered?.from_state === 'recovering' && r ? ` (after a crash: ${cell(r.reason, 300)})` : ''}.`,
        `Review the working tree, then run ${code(`atlas resume --task ${id}`)} to continue (or ${code(`atlas recover --task ${id}`)} after a crash), or ${code(`atlas abandon --task ${id}`)} to stop.`,
      ];
    case 'recovering':
      return [`Recovery is under way. Run ${code(`atlas recover --task ${id}`)} to continue it.`];
    case 'completed':
      return ['The task completed. Nothing to do.'];
    case 'failed':
      return [
        'The task failed for good (a failed task is never resumed). Read the recent history below, fix the cause, and start a new task.',
      ];
    case 'abandoned':
      return ['The task was abandoned. Nothing to do.'];
  }
}

function savedWork(input: MarkdownInput): string[] {
  const events = input.hook.history.filter((e) => e.trigger === 'work_saved' && typeof e.details?.['branch'] === 'string');
  if (events.length === 0) return [];
  const tree = input.task ? `git -C ${input.task.worktree}` : 'git';
  return [
    '## Saved work',
    '',
    'Uncommitted work that recovery saved before resetting the working tree. Nothing in it was deleted.',
    '',
    ...events.map((e) => {
      const branch = String(e.details!['branch']);
      return `- ${e.timestamp}: branch ${code(branch)} (${e.details?.['files'] ?? '?'} changed path${e.details?.['files'] === 1 ? '' : 's'}). Restore the files: ${code(`${tree} checkout ${branch} -- .`)}; see them: ${code(`${tree} diff HEAD ${branch}`)}.`;
    }),
    '',
  ];
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
    const usage = input.conversations ? usageCells(input.conversations, s.name) : '';
    const mode = stepExecutionMode(hook, s.name);
    return `| ${i + 1} | ${cell(s.name)} | ${s.type} | ${status}${mode ? ` (${mode})` : ''} |${usage}`;
  });
  const head = input.conversations
    ? ['| # | Step | Type | Status | Tokens | Cost |', '|---|---|---|---|---|---|']
    : ['| # | Step | Type | Status |', '|---|---|---|---|'];
  return ['## Steps', '', ...head, ...rows, ''];
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
    ...lastMessages(input.conversations),
    '## What to do now',
    '',
    ...whatToDo(input),
    '',
    ...savedWork(input),
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

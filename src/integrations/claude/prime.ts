// Priming (seed 004): a Claude Code session that starts (or resumes, or is compacted) in the
// working tree of a task that was interrupted, is in recovery, or stopped mid-step gets the
// task's HOOK.md brief as additionalContext, most useful parts first, within Claude Code's cap.
import type { Hook } from '../../domain/hook.js';
import { isRecoverablePause } from '../../domain/recovery-rules.js';

/** Claude Code keeps at most this much of a hook's additionalContext. */
export const MAX_ADDITIONAL_CONTEXT = 10_000;

/** HOOK.md's sections in the order a fresh session needs them. */
const ORDER = [
  'What to do now',
  'Current step',
  'Saved work',
  'Do not',
  'Steps',
  'Checkpoints',
  'Recent history',
  'Validation receipts',
  'Troubleshooting',
];

export function shouldPrime(hook: Hook): boolean {
  if (hook.state === 'recovering') return true;
  if (hook.state === 'awaiting_human') return isRecoverablePause(hook);
  return (hook.state === 'step_running' || hook.state === 'step_validating') && hook.current_step !== undefined;
}

function splitSections(markdown: string): { head: string; sections: Map<string, string> } {
  const parts = markdown.split(/^(?=## )/m);
  const head = parts.shift() ?? '';
  const sections = new Map<string, string>();
  for (const part of parts) sections.set(part.slice(3, part.indexOf('\n') >= 0 ? part.indexOf('\n') : undefined).trim(), part.trimEnd());
  return { head: head.trimEnd(), sections };
}

/** The brief for additionalContext, never longer than `max` characters. */
export function primingContext(markdown: string, taskId: string, max = MAX_ADDITIONAL_CONTEXT): string {
  const preface = [
    `atlas: this working tree belongs to task ${taskId}, which did not finish. Its recovery brief (HOOK.md) follows, most useful parts first.`,
    'Check the working tree (git status, git diff) and build on the work already done; record progress with `atlas checkpoint "what you did"`.',
    '',
  ].join('\n');
  const { head, sections } = splitSections(markdown);
  const ordered = [
    head,
    ...ORDER.map((name) => sections.get(name)),
    ...[...sections].filter(([name]) => !ORDER.includes(name)).map(([, text]) => text),
  ].filter((s): s is string => s !== undefined && s.length > 0);
  let out = preface;
  const marker = '\n[… brief cut to fit; read HOOK.md in the task folder for the rest]';
  for (const section of ordered) {
    const piece = `${section}\n\n`;
    if (out.length + piece.length <= max) {
      out += piece;
      continue;
    }
    const room = max - out.length - marker.length;
    if (room > 200) {
      const cut = piece.slice(0, room);
      out += cut.slice(0, Math.max(0, cut.lastIndexOf('\n'))) + marker;
    } else if (out.length + marker.length <= max) {
      out += marker;
    }
    break;
  }
  return out.trimEnd().slice(0, max);
}

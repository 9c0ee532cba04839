// What a step's output gained between two readings of hook.json's current_step.last_output,
// which holds only the output's tail (a command's output accumulates, an agent step's latest
// message replaces the previous one). Pure: used to stream, line by line, the output of a task
// that another process runs.

/**
 * The text `next` adds to `prev`: after the longest end of `prev` that `next` starts with (the
 * tail moved on), or all of `next` when they do not overlap (`replaced`: the output was replaced).
 */
export function outputAdded(prev: string, next: string): { added: string; replaced: boolean } {
  if (next === prev) return { added: '', replaced: false };
  if (prev.length === 0) return { added: next, replaced: false };
  if (next.startsWith(prev)) return { added: next.slice(prev.length), replaced: false };
  // The tail was cut at its start: find where the old end sits in the new text.
  for (let i = 1; i < prev.length; i++) {
    const end = prev.slice(i);
    if (next.startsWith(end)) return { added: next.slice(end.length), replaced: false };
  }
  return { added: next, replaced: true };
}

/** Splits added text into whole lines; `pending` is the unfinished last line carried over. */
export function outputLines(pending: string, added: string): { lines: string[]; pending: string } {
  const parts = (pending + added).split('\n');
  const rest = parts.pop() ?? '';
  return { lines: parts.map((l) => l.replace(/\r$/, '')).filter((l) => l.length > 0), pending: rest };
}

/** The output tails of the steps that ended among `events` (step_complete events that kept one), in order. */
export function endedStepOutputs(
  events: readonly { trigger: string; details?: Record<string, unknown> }[],
): { step: number; output: string }[] {
  const out: { step: number; output: string }[] = [];
  for (const e of events) {
    const step = e.details?.['step_index'];
    const output = e.details?.['last_output'];
    if (e.trigger === 'step_complete' && typeof step === 'number' && typeof output === 'string') out.push({ step, output });
  }
  return out;
}

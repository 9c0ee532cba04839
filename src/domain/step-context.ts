// The active step's details (seed 003 StepContext) and its validation rules.

export const MAX_LAST_OUTPUT_LENGTH = 500;

export interface StepContext {
  step_name: string;
  step_index: number;
  started_at: string;
  /** 1-based. */
  attempt: number;
  max_attempts: number;
  working_on?: string;
  files_touched?: string[];
  last_output?: string;
  current_checkpoint_id?: string;
  /** Addition: the agent's session id (Claude Code reports one), so a retry can resume it. */
  agent_session_id?: string;
}

/** Keeps the last 500 characters: for a resumed session the end of the output is what matters. */
export function truncateOutput(text: string, max = MAX_LAST_OUTPUT_LENGTH): string {
  // Code units >= code points: short text needs no counting, and a long one is cut to its tail
  // before it is split (a 50 MB field must not become a 50-million-element array).
  if (text.length <= max) return text;
  const chars = Array.from(text.slice(-2 * max));
  return chars.length <= max ? chars.join('') : chars.slice(chars.length - max).join('');
}

/** First-seen order, no duplicates, no empty paths. */
export function dedupeFiles(files: readonly string[]): string[] {
  return [...new Set(files.filter((f) => f.length > 0))];
}

export function addFilesTouched(ctx: StepContext, files: readonly string[]): StepContext {
  const merged = dedupeFiles([...(ctx.files_touched ?? []), ...files]);
  return { ...ctx, files_touched: merged };
}

export function withLastOutput(ctx: StepContext, output: string): StepContext {
  return { ...ctx, last_output: truncateOutput(output) };
}

export class InvalidStepContextError extends Error {
  override name = 'InvalidStepContextError';
}

export function assertValidStepContext(ctx: StepContext, stepCount?: number): void {
  if (!Number.isInteger(ctx.attempt) || ctx.attempt < 1) {
    throw new InvalidStepContextError(`current_step.attempt must be an integer >= 1 (got ${ctx.attempt})`);
  }
  if (!Number.isInteger(ctx.max_attempts) || ctx.max_attempts < 1) {
    throw new InvalidStepContextError(`current_step.max_attempts must be an integer >= 1 (got ${ctx.max_attempts})`);
  }
  if (!Number.isInteger(ctx.step_index) || ctx.step_index < 0 || (stepCount !== undefined && ctx.step_index >= stepCount)) {
    throw new InvalidStepContextError(
      `current_step.step_index ${ctx.step_index} is not a step of this task` +
        (stepCount !== undefined ? ` (it has ${stepCount} steps)` : ''),
    );
  }
}

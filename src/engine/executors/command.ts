// `command` steps: each `run` command through the shell in the task's working tree, in order,
// output streamed as it comes; the first non-zero exit fails the step.
import { StringDecoder } from 'node:string_decoder';
import { formatDuration } from '../../domain/duration.js';
import type { CommandStep } from '../../domain/template.js';
import type { ProcessExecutor } from '../../exec/types.js';
import type { RunProcessResult } from '../processes.js';
import { runProcess } from '../processes.js';
import type { StepResult, StepRunContext } from './types.js';

/** Runs one shell command with output going to the reporter and the step's last_output. */
export async function runStreamed(
  ctx: StepRunContext,
  command: string,
  options: { timeoutMs?: number | undefined; capture?: boolean; executor?: ProcessExecutor; cwd?: string },
): Promise<RunProcessResult> {
  const out = new StringDecoder('utf8');
  const err = new StringDecoder('utf8');
  const emit = (text: string, stream: 'stdout' | 'stderr') => {
    if (text.length === 0) return;
    ctx.reporter.output(text, stream);
    ctx.progress.appendOutput(text);
  };
  const result = await runProcess({
    command,
    shell: true,
    cwd: options.cwd ?? ctx.task.worktree,
    env: ctx.env,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    capture: options.capture ?? false,
    groups: ctx.groups,
    executor: options.executor ?? ctx.executor,
    onStdout: (chunk) => emit(out.write(chunk), 'stdout'),
    onStderr: (chunk) => emit(err.write(chunk), 'stderr'),
  });
  emit(out.end(), 'stdout');
  emit(err.end(), 'stderr');
  return result;
}

export function describeExit(command: string, result: RunProcessResult, timeoutMs?: number): string {
  if (result.timedOut) return `\`${command}\` did not finish within ${formatDuration(timeoutMs ?? 0)} and was stopped`;
  if (result.signal) return `\`${command}\` was killed by ${result.signal}`;
  return `\`${command}\` exited with code ${result.exitCode}${result.sandboxNote ? ` (${result.sandboxNote})` : ''}`;
}

export async function runCommandStep(ctx: StepRunContext<CommandStep>): Promise<StepResult> {
  const deadline = ctx.step.timeout_ms !== undefined ? Date.now() + ctx.step.timeout_ms : undefined;
  for (const [i, raw] of ctx.step.run.entries()) {
    const command = raw;
    ctx.progress.setWorkingOn(`running ${command}`, { now: true });
    ctx.reporter.note(`$ ${command}`);
    const timeoutMs = deadline !== undefined ? Math.max(1, deadline - Date.now()) : undefined;
    const result = await runStreamed(ctx, command, { timeoutMs });
    if (ctx.interrupts.signal) return { status: 'failed', error: `interrupted while running \`${command}\`` };
    if (result.exitCode !== 0) {
      return {
        status: 'failed',
        error: `${describeExit(command, result, ctx.step.timeout_ms)}${ctx.step.run.length > 1 ? ` (command ${i + 1} of ${ctx.step.run.length})` : ''}`,
      };
    }
  }
  return { status: 'ok', summary: `${ctx.step.run.length} command${ctx.step.run.length === 1 ? '' : 's'} passed` };
}

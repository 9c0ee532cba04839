// `human` steps: a person approves. On a terminal: approve / reject / stop for now. Without one
// (or with --no-interactive) the task waits in awaiting_human for `atlas resume --approve`.
import type { HumanStep } from '../../domain/template.js';
import type { StepResult, StepRunContext } from './types.js';

type Choice = 'approve' | 'reject' | 'stop';

function isPromptExit(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name;
  return name === 'ExitPromptError' || name === 'AbortPromptError' || name === 'CancelPromptError';
}

export async function runHumanStep(ctx: StepRunContext<HumanStep>): Promise<StepResult> {
  const prompt = ctx.fill(ctx.step.prompt).trim();
  ctx.progress.setWorkingOn(`waiting for a person: ${prompt.split('\n')[0]}`);
  if (!ctx.interactive) return { status: 'waiting', reason: 'approval', prompt };

  ctx.reporter.close();
  const { select } = await import('@inquirer/prompts');
  const controller = new AbortController();
  void ctx.interrupts.wait().then(() => controller.abort());
  let answer: Choice;
  try {
    answer = await select<Choice>(
      {
        message: `${prompt}\n`,
        choices: [
          { name: 'Approve', value: 'approve', description: 'the step is done; the task continues' },
          { name: 'Reject', value: 'reject', description: 'the task fails here' },
          { name: 'Stop for now', value: 'stop', description: `the task waits; continue later with atlas resume --task ${ctx.task.id}` },
        ],
      },
      // Prompts go to stderr so that stdout stays clean for --json.
      { signal: controller.signal, output: process.stderr },
    );
  } catch (error) {
    if (!isPromptExit(error)) throw error;
    // Ctrl+C inside the prompt arrives as a key press, not a signal: treat it as one.
    ctx.interrupts.interrupt('SIGINT');
    return { status: 'failed', error: 'interrupted at the approval prompt' };
  }
  switch (answer) {
    case 'approve':
      return { status: 'ok', summary: 'approved', details: { decision: 'approved' } };
    case 'reject':
      return { status: 'rejected', note: 'rejected at the prompt' };
    case 'stop':
      return { status: 'waiting', reason: 'paused', prompt };
  }
}

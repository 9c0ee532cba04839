// `ai` steps: the configured agent (Claude Code by default, or any command) works in the task's
// working tree. A retry resumes the agent's own session when one is known (Claude Code), telling
// it what happened; otherwise the new session gets the task's HOOK.md brief before the prompt.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentUpdate } from '../../agent/claude-stream.js';
import { assertAgentConfigured } from '../../agent/configured.js';
import type { AgentRunInput, AgentRunResult } from '../../agent/types.js';
import type { AiStep } from '../../domain/template.js';
import { writeFileAtomic } from '../../store/atomic-write.js';
import { stepOutputPath } from '../prompt.js';
import type { StepResult, StepRunContext } from './types.js';

/** The prompt for a fresh session that continues earlier work: the brief, what happened, the step. */
export function retryPrompt(brief: string, note: string, stepPrompt: string): string {
  return [
    'You are continuing a task that atlas (a task runner) started earlier and that did not finish.',
    'Its recovery brief (HOOK.md) follows: read it first, then check the working tree (git status, git diff)',
    'so that you build on the work already done instead of starting over.',
    '',
    '<hook-brief>',
    brief.trim(),
    '</hook-brief>',
    '',
    note.trim(),
    '',
    'The step\'s instructions:',
    '',
    stepPrompt.trim(),
  ].join('\n');
}

function readBrief(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '(HOOK.md could not be read)';
  }
}

export async function runAiStep(ctx: StepRunContext<AiStep>): Promise<StepResult> {
  const ai = ctx.config.ai;
  assertAgentConfigured(ai, ctx.env);
  const runAgent: (input: AgentRunInput) => Promise<AgentRunResult> =
    ai.agent === 'claude' ? (await import('../../agent/claude.js')).runClaude : (await import('../../agent/command-agent.js')).runCommandAgent;
  const stepPrompt = ctx.fill(ctx.step.prompt);
  const timeoutMs = ctx.step.timeout_ms ?? ai.timeout;
  let sessionStarted = false;

  const run = (prompt: string, resumeSessionId?: string) =>
    runAgent({
      prompt,
      resumeSessionId,
      cwd: ctx.task.worktree,
      env: ctx.env,
      timeoutMs,
      ai,
      groups: ctx.groups,
      executor: ctx.executor,
      onOutput: (text, stream) => ctx.reporter.output(text, stream),
      onUpdate: (u: AgentUpdate) => {
        switch (u.kind) {
          case 'session':
            sessionStarted = true;
            ctx.progress.setSessionId(u.sessionId);
            break;
          case 'text':
            ctx.progress.setOutput(u.text);
            break;
          case 'tool':
            ctx.progress.setWorkingOn(u.workingOn);
            if (u.file) ctx.progress.addFiles([u.file]);
            break;
          case 'result':
            if (u.sessionId) ctx.progress.setSessionId(u.sessionId);
            if (u.text && !u.isError) ctx.progress.setOutput(u.text);
            break;
          case 'raw':
            ctx.progress.appendOutput(u.text);
            break;
        }
      },
    });

  let result: AgentRunResult;
  const fresh = () => retryPrompt(readBrief(ctx.manager.files.hookMarkdown), ctx.retry!.note, stepPrompt);
  if (ctx.retry?.sessionId && ai.agent === 'claude') {
    ctx.reporter.note(`resuming agent session ${ctx.retry.sessionId}`);
    result = await run(ctx.retry.note, ctx.retry.sessionId);
    if (!result.ok && !sessionStarted && !ctx.interrupts.signal) {
      ctx.reporter.note(`could not resume session ${ctx.retry.sessionId} (${result.error ?? 'unknown error'}); starting a new session with the recovery brief`);
      result = await run(fresh());
    }
  } else if (ctx.retry) {
    ctx.reporter.note('starting a new agent session with the recovery brief (HOOK.md)');
    result = await run(fresh());
  } else {
    result = await run(stepPrompt);
  }

  // The final answer is kept for later steps ({{outputs.<step>}}) and for people.
  const attemptPath = join(ctx.taskDir, 'artifacts', ctx.step.name, `${ctx.attempt}-output.md`);
  mkdirSync(dirname(attemptPath), { recursive: true });
  writeFileAtomic(attemptPath, result.output);
  if (result.ok) writeFileAtomic(join(ctx.taskDir, stepOutputPath(ctx.step.name)), result.output);

  const details: Record<string, unknown> = { agent: ai.agent };
  if (result.sessionId) details['session_id'] = result.sessionId;
  if (result.usage) details['usage'] = result.usage;
  if (result.costUsd !== undefined) details['cost_usd'] = result.costUsd;
  if (!result.ok) return { status: 'failed', error: result.error ?? `the agent exited with code ${result.exitCode}` };
  const tokens = result.usage ? `, ${result.usage.input_tokens + result.usage.cache_read_input_tokens + result.usage.cache_creation_input_tokens} in / ${result.usage.output_tokens} out tokens` : '';
  return { status: 'ok', summary: `agent finished${result.files.length ? `, ${new Set(result.files).size} file(s) edited` : ''}${tokens}`, details };
}

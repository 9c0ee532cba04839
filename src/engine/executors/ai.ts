// `ai` steps: the configured agent (Claude Code by default, or any command) works in the task's
// working tree. A retry resumes the agent's own session when one is known (Claude Code), telling
// it what happened; otherwise the new session gets the task's HOOK.md brief before the prompt.
// Each agent run is a conversation (src/conversation/): its messages and tokens go through the
// step's lifecycle bus, whose defaults record them.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { allowedToolsFor } from '../../agent/allowed-tools.js';
import { claudeConfigDir } from '../../agent/claude-config-dir.js';
import { describeDenial } from '../../agent/claude-result.js';
import type { AgentUpdate } from '../../agent/claude-stream.js';
import { assertAgentConfigured } from '../../agent/configured.js';
import type { AgentRunInput, AgentRunResult } from '../../agent/types.js';
import { AgentConversation } from '../../conversation/agent-conversation.js';
import type { ConversationRecord, PermissionDenial } from '../../domain/conversation.js';
import type { AiStep } from '../../domain/template.js';
import { PRIVATE_DIR_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { stepOutputPath } from '../prompt.js';
import { attemptLedger, DENIAL_HINT, denialWarnings, formatLedger, previousAttemptError, sortDenials } from './ai-outcome.js';
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
    "The step's instructions:",
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

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function runAiStep(ctx: StepRunContext<AiStep>): Promise<StepResult> {
  const ai = ctx.config.ai;
  assertAgentConfigured(ai, ctx.env);
  const runAgent: (input: AgentRunInput) => Promise<AgentRunResult> =
    ai.agent === 'claude'
      ? (await import('../../agent/claude.js')).runClaude
      : (await import('../../agent/command-agent.js')).runCommandAgent;
  const stepPrompt = ctx.fill(ctx.step.prompt);
  const timeoutMs = ctx.step.timeout_ms ?? ai.timeout;
  const allowedTools = ai.agent === 'claude' ? allowedToolsFor(ctx.step, ctx.task, ctx.config) : [];
  const conversations: ConversationRecord[] = [];
  const denials: PermissionDenial[] = [];
  let sessionStarted = false;
  let recordingFailed = false;
  const recordingError = (error: unknown) => {
    if (recordingFailed) return;
    recordingFailed = true;
    ctx.reporter.note(`could not record the conversation: ${message(error)}`);
  };

  const onUpdate = (u: AgentUpdate) => {
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
      case 'event':
        break;
    }
  };

  const run = async (prompt: string, resumeSessionId?: string): Promise<AgentRunResult> => {
    const newSessionId = ai.agent === 'claude' && !resumeSessionId ? randomUUID() : undefined;
    if (newSessionId) {
      // In the hook before Claude Code starts: if atlas dies before Claude Code says its session
      // (no event yet), the retry still resumes it (and falls back to a new one if none was made).
      ctx.progress.setSessionId(newSessionId);
      await ctx.progress.flush();
    }
    let conversation: AgentConversation | undefined;
    try {
      conversation = new AgentConversation({
        lifecycle: ctx.lifecycle,
        taskDir: ctx.taskDir,
        taskId: ctx.task.id,
        stepName: ctx.step.name,
        attempt: ctx.attempt,
        agent: ai.agent,
        model: ai.model,
        workspace: ctx.task.worktree,
        prompt,
        resumeSessionId,
        newSessionId,
      });
    } catch (error) {
      recordingError(error);
    }
    const finish = async (end: Parameters<AgentConversation['end']>[0]) => {
      if (!conversation) return;
      try {
        conversations.push(await conversation.end(end));
        denials.push(...conversation.permissionDenials);
      } catch (error) {
        recordingError(error);
      }
    };
    let result: AgentRunResult;
    try {
      result = await runAgent({
        prompt,
        resumeSessionId,
        sessionId: newSessionId,
        cwd: ctx.task.worktree,
        env: ctx.env,
        timeoutMs,
        ai,
        allowedTools,
        groups: ctx.groups,
        executor: ctx.executor,
        // In the sandbox the hook cannot write $ATLAS_HOME: it hands its events to atlas instead.
        ...(ctx.executor.mode === 'sandbox'
          ? {
              hookChannel: { home: ctx.home, taskDir: ctx.taskDir, worktree: ctx.task.worktree, claudeConfigDir: claudeConfigDir(ctx.env) },
            }
          : {}),
        onOutput: (text, stream) => ctx.reporter.output(text, stream),
        onUpdate: (u) => {
          try {
            conversation?.update(u);
          } catch (error) {
            recordingError(error);
          }
          onUpdate(u);
        },
      });
    } catch (error) {
      await finish({ ok: false, error: message(error), interrupted: Boolean(ctx.interrupts.signal) });
      throw error;
    }
    await finish({ ok: result.ok, error: result.error, interrupted: Boolean(ctx.interrupts.signal), output: result.output });
    return result;
  };

  let result: AgentRunResult;
  // The brief as it was when the attempt began (it describes the crash); HOOK.md is rewritten since.
  const fresh = () => retryPrompt(ctx.retry?.brief ?? readBrief(ctx.manager.files.hookMarkdown), ctx.retry!.note, stepPrompt);
  if (ctx.retry?.sessionId && ai.agent === 'claude') {
    ctx.reporter.note(`resuming agent session ${ctx.retry.sessionId}`);
    result = await run(ctx.retry.note, ctx.retry.sessionId);
    if (!result.ok && !sessionStarted && !ctx.interrupts.signal && !result.permanent) {
      ctx.reporter.note(
        `could not resume session ${ctx.retry.sessionId} (${result.error ?? 'unknown error'}); starting a new session with the recovery brief`,
      );
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
  mkdirSync(dirname(attemptPath), { recursive: true, mode: PRIVATE_DIR_MODE });
  writeFileAtomic(attemptPath, result.output);
  if (result.ok) writeFileAtomic(join(ctx.taskDir, stepOutputPath(ctx.step.name)), result.output);

  // Kept whatever the outcome: the tokens of a failed or cut-off attempt were spent too.
  const ledger = attemptLedger(conversations);
  const sorted = sortDenials(denials, ctx.task.worktree, ctx.home);
  const details: Record<string, unknown> = { agent: ai.agent };
  if (result.sessionId) details['session_id'] = result.sessionId;
  if (result.usage) details['usage'] = result.usage;
  if (conversations.length > 0) details['conversations'] = ledger.conversations;
  if (ledger.cost_usd !== null) details['cost_usd'] = ledger.cost_usd;
  else if (result.costUsd !== undefined) details['cost_usd'] = result.costUsd;
  if (conversations.length > 0)
    details['tokens'] = {
      input: ledger.input_tokens,
      output: ledger.output_tokens,
      cache_read: ledger.cache_read_tokens,
      cache_creation: ledger.cache_creation_tokens,
      partial: ledger.partial,
    };
  if (denials.length > 0) {
    const byGuard = new Set(sorted.guard.map((g) => g.denial));
    details['permission_denials'] = denials.map((d) => ({
      tool: d.tool_name,
      call: describeDenial(d),
      tool_use_id: d.tool_use_id,
      ...(byGuard.has(d) ? { refused_by: 'atlas guard' } : {}),
    }));
    // Failing on them says all of it once, in the failure (its hint says how to allow them).
    const failing = result.ok && ai.on_permission_denial === 'fail';
    if (!failing) for (const line of denialWarnings(sorted)) ctx.reporter.note(`warning: ${line}`);
  }
  const tokens = formatLedger(ledger);

  if (!result.ok) {
    const error = result.error ?? `the agent exited with code ${result.exitCode}`;
    if (result.permanent) return { status: 'failed', error, permanent: true, hint: result.permanent.hint, details };
    // Failing again exactly as before, before the agent even started: a retry cannot help.
    if (!sessionStarted && !ctx.interrupts.signal && previousAttemptError(ctx.manager.read(), ctx.index) === error) {
      return {
        status: 'failed',
        error,
        permanent: true,
        hint: 'the agent failed the same way on the previous attempt, before it started: fix the cause (see the error), then `atlas resume`',
        details,
      };
    }
    return { status: 'failed', error, details };
  }
  if (denials.length > 0 && ai.on_permission_denial === 'fail') {
    // The guard's refusals are never the agent's to get: the hint says how to allow the others only.
    const hint =
      sorted.permission.length > 0
        ? `${DENIAL_HINT}; or set ai.on_permission_denial: warn`
        : 'atlas guard refusals cannot be allowed; set ai.on_permission_denial: warn to let the step finish without those calls';
    return { status: 'failed', error: denialWarnings(sorted, false).join('; '), permanent: true, hint, details };
  }
  const parts = ['agent finished'];
  if (result.files.length) parts.push(`${new Set(result.files).size} file(s) edited`);
  if (tokens) parts.push(tokens);
  if (denials.length > 0) parts.push(`⚠ ${denials.length} tool call(s) refused`);
  return { status: 'ok', summary: parts.join(', '), details };
}

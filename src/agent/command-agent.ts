// Any command-line agent (ai.agent: command): ai.command runs through the shell in the working
// tree with the prompt on stdin, in $ATLAS_PROMPT, and in place of {prompt} (shell-quoted).
// Its stdout is the agent's output.
import { StringDecoder } from 'node:string_decoder';
import { formatDuration } from '../domain/duration.js';
import { runProcess, shellQuote } from '../engine/processes.js';
import { ClaudeStreamParser } from './claude-stream.js';
import { assertAgentConfigured } from './configured.js';
import type { AgentRunInput, AgentRunResult } from './types.js';

export function agentCommandLine(command: string, prompt: string): string {
  return command.split('{prompt}').join(shellQuote(prompt));
}

export async function runCommandAgent(input: AgentRunInput): Promise<AgentRunResult> {
  assertAgentConfigured(input.ai, input.env);
  const out = new StringDecoder('utf8');
  // An agent that prints Claude-style stream-json gets its messages and tokens recorded too.
  const events = new ClaudeStreamParser(input.cwd);
  const forwardEvents = (updates: ReturnType<ClaudeStreamParser['push']>) => {
    for (const u of updates) if (u.kind === 'event') input.onUpdate(u);
  };
  const err = new StringDecoder('utf8');
  const run = await runProcess({
    command: agentCommandLine(input.ai.command, input.prompt),
    shell: true,
    cwd: input.cwd,
    env: { ...input.env, ATLAS_PROMPT: input.prompt },
    input: input.prompt,
    timeoutMs: input.timeoutMs,
    capture: true,
    groups: input.groups,
    executor: input.executor,
    onStdout: (chunk) => {
      const text = out.write(chunk);
      if (text) {
        input.onOutput(text, 'stdout');
        input.onUpdate({ kind: 'raw', text });
        forwardEvents(events.push(text));
      }
    },
    onStderr: (chunk) => {
      const text = err.write(chunk);
      if (text) input.onOutput(text, 'stderr');
    },
  });
  forwardEvents(events.push(out.end()));
  forwardEvents(events.end());
  const output = run.stdout.toString('utf8');
  const base: AgentRunResult = { ok: false, exitCode: run.exitCode, timedOut: run.timedOut, output, files: [] };
  if (run.timedOut)
    return {
      ...base,
      error: `the agent command did not finish within ${formatDuration(input.timeoutMs)} (ai.timeout, or the step's timeout)`,
    };
  if (run.exitCode !== 0) {
    const lastLine = run.stderr.toString('utf8').trim().split('\n').pop() ?? '';
    const notFound = run.exitCode === 127 ? ' (command not found: check ai.command)' : '';
    const sandbox = run.sandboxNote ? ` (${run.sandboxNote})` : '';
    return { ...base, error: `the agent command exited with code ${run.exitCode}${notFound}${lastLine ? `: ${lastLine}` : ''}${sandbox}` };
  }
  return { ...base, ok: true };
}

// Runs Claude Code headless: `claude -p <prompt> --output-format stream-json --verbose`
// (`claude --resume <session> -p <note> ...` to continue a session), parsing its event stream.
import { StringDecoder } from 'node:string_decoder';
import { formatDuration } from '../domain/duration.js';
import { runProcess } from '../engine/processes.js';
import { realpath } from '../git/locate.js';
import { openHookChannel } from '../integrations/claude/channel-pipe.js';
import { claudeHookArgs } from '../integrations/claude/launch.js';
import { withPathEnvFile } from './claude-env-file.js';
import { StderrFilter } from './claude-noise.js';
import type { AgentUpdate, TokenUsage } from './claude-stream.js';
import { ClaudeStreamParser, toolResults } from './claude-stream.js';
import { configurationError } from './config-errors.js';
import { assertAgentConfigured } from './configured.js';
import { findExecutable } from './find-executable.js';
import type { AgentRunInput, AgentRunResult } from './types.js';

/** Prompts longer than this go to claude on stdin: one argument may not exceed 128 KiB on Linux. */
export const MAX_PROMPT_ARG_BYTES = 100_000;

/** The prompt as an argument: a leading "-" would be read as an option, so it gets a space. */
function promptArg(prompt: string): string {
  return prompt.startsWith('-') ? ` ${prompt}` : prompt;
}

export function claudeArgs(
  input: Pick<AgentRunInput, 'prompt' | 'resumeSessionId' | 'sessionId' | 'allowedTools'> & {
    ai: Pick<AgentRunInput['ai'], 'model' | 'permission_mode'>;
  },
  options: { promptOnStdin?: boolean } = {},
): string[] {
  const print = options.promptOnStdin ? ['-p'] : ['-p', promptArg(input.prompt)];
  const args = input.resumeSessionId
    ? ['--resume', input.resumeSessionId, ...print]
    : input.sessionId
      ? ['--session-id', input.sessionId, ...print]
      : print;
  args.push('--output-format', 'stream-json', '--verbose');
  if (input.ai.model) args.push('--model', input.ai.model);
  if (input.ai.permission_mode) args.push('--permission-mode', input.ai.permission_mode);
  // Last: the option takes every argument after it.
  if (input.allowedTools?.length) args.push('--allowedTools', ...input.allowedTools);
  return args;
}

/** "the API answered 500 (server_error); Claude Code retries, 3 of 10, in 2.5 s". */
export function retryLine(u: Extract<AgentUpdate, { kind: 'retry' }>): string {
  const answer = u.status
    ? `the API answered ${u.status}${u.error ? ` (${u.error})` : ''}`
    : `the API request failed${u.error ? ` (${u.error})` : ''}`;
  return `⚠ ${answer}; Claude Code retries, ${u.attempt} of ${u.maxRetries}, in ${(u.delayMs / 1000).toFixed(1)} s`;
}

export async function runClaude(input: AgentRunInput): Promise<AgentRunResult> {
  assertAgentConfigured(input.ai, input.env);
  const claude = findExecutable('claude', input.env) ?? 'claude';
  const parser = new ClaudeStreamParser(input.cwd, realpath(input.cwd));
  const decoder = new StringDecoder('utf8');
  const files: string[] = [];
  let sessionId: string | undefined;
  let lastText = '';
  let result: Extract<AgentUpdate, { kind: 'result' }> | undefined;
  let stderrTail = '';
  let toolRunning = false;
  let streaming = false;
  const noise = new StderrFilter();
  /** Files of edit tool calls waiting for their result: a failed Write edited nothing. */
  const pendingEdits = new Map<string, string>();

  const handle = (updates: AgentUpdate[]) => {
    if (updates.length > 0) streaming = true;
    for (const u of updates) {
      switch (u.kind) {
        case 'session':
          sessionId = u.sessionId;
          break;
        case 'text':
          lastText = u.text;
          input.onOutput(u.text.endsWith('\n') ? u.text : `${u.text}\n`, 'stdout');
          break;
        case 'tool':
          toolRunning = true;
          if (u.file && u.id) pendingEdits.set(u.id, u.file);
          else if (u.file) files.push(u.file);
          input.onOutput(`→ ${u.summary}\n`, 'stdout');
          break;
        case 'result':
          result = u;
          if (u.sessionId) sessionId = u.sessionId;
          break;
        case 'raw':
          input.onOutput(`${u.text}\n`, 'stdout');
          break;
        case 'retry':
          input.onOutput(`${retryLine(u)}\n`, 'stderr');
          break;
        case 'event':
          // A tool's run is not the API's: the stall clock waits from a tool call to its result.
          if (u.event['type'] === 'user') {
            toolRunning = false;
            for (const r of toolResults(u.event)) {
              const file = pendingEdits.get(r.id);
              pendingEdits.delete(r.id);
              if (file && !r.isError) files.push(file);
            }
          }
          break;
      }
      input.onUpdate(u);
    }
  };

  const promptOnStdin = Buffer.byteLength(input.prompt) > MAX_PROMPT_ARG_BYTES;
  // Sandbox mode: the hooks hand their events to atlas, which records them when they come.
  const channel = input.hookChannel ? openHookChannel(input.hookChannel) : undefined;
  const envFile = withPathEnvFile(input.env);
  const run = await runProcess({
    command: claude,
    args: [...claudeArgs(input, { promptOnStdin }), ...claudeHookArgs(channel?.path)],
    ...(promptOnStdin ? { input: input.prompt } : {}),
    cwd: input.cwd,
    env: envFile.env,
    timeoutMs: input.timeoutMs,
    // The stall clock runs from Claude Code's first event (its start-up is ai.timeout's).
    ...(input.ai.stall_timeout > 0 ? { stall: { ms: input.ai.stall_timeout, paused: () => !streaming || toolRunning } } : {}),
    groups: input.groups,
    executor: input.executor,
    onStdout: (chunk) => handle(parser.push(decoder.write(chunk))),
    onStderr: (chunk) => {
      const text = noise.push(chunk.toString('utf8'));
      stderrTail = (stderrTail + text).slice(-2000);
      if (text) input.onOutput(text, 'stderr');
    },
  }).finally(async () => {
    envFile.remove();
    await channel?.close(); // every event the hooks sent is recorded before the step goes on
  });
  handle(parser.push(decoder.end()));
  handle(parser.end());
  const rest = noise.end();
  if (rest) {
    stderrTail = (stderrTail + rest).slice(-2000);
    input.onOutput(rest, 'stderr');
  }
  // An edit whose result never came (the run was cut off) may have happened: it counts.
  files.push(...pendingEdits.values());

  const finished = result as Extract<AgentUpdate, { kind: 'result' }> | undefined;
  const output = finished?.text && !finished.isError ? finished.text : lastText;
  const usage: TokenUsage | undefined = finished?.usage;
  const base: AgentRunResult = {
    ok: false,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    output,
    files,
    ...(sessionId ? { sessionId } : {}),
    ...(usage ? { usage } : {}),
    ...(finished?.costUsd !== undefined ? { costUsd: finished.costUsd } : {}),
  };
  if (run.stalled) {
    return {
      ...base,
      error: `Claude Code gave no sign of life for ${formatDuration(input.ai.stall_timeout)} while it waited for the model API, so atlas stopped it (ai.stall_timeout): the API may be down or hanging`,
    };
  }
  if (run.timedOut)
    return { ...base, error: `Claude Code did not finish within ${formatDuration(input.timeoutMs)} (ai.timeout, or the step's timeout)` };
  const misconfigured = !finished || finished.isError ? configurationError(`${stderrTail}\n${finished?.text ?? ''}`) : undefined;
  if (misconfigured) return { ...base, error: misconfigured.error, permanent: { hint: misconfigured.hint } };
  if (finished?.isError) return { ...base, error: `Claude Code reported an error: ${finished.text || 'unknown'}` };
  if (run.exitCode !== 0) {
    const lastLine = stderrTail.trim().split('\n').pop() ?? '';
    return { ...base, error: `claude exited with code ${run.exitCode}${lastLine ? `: ${lastLine}` : ''}` };
  }
  return { ...base, ok: true };
}

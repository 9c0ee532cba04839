// One prompt of a conversation: the agent (Claude Code headless, resuming the conversation's
// session; or the command agent, whose stream-json output is read the same way) works in the
// conversation's workspace. Every assistant message, tool use and tool result becomes a message
// (OnMessage) and an event; the turn ends with OnStreamFinish and a `usage` event carrying this
// turn's tokens and the conversation's totals (seed 001 5.8).
import type { AgentUpdate, TokenUsage } from '../agent/claude-stream.js';
import { ClaudeStreamParser } from '../agent/claude-stream.js';
import type { AgentRunInput, AgentRunResult } from '../agent/types.js';
import type { Config } from '../config/schema.js';
import type { ConversationStats, Message, ToolCall } from '../domain/conversation.js';
import { MESSAGE_ROLE } from '../domain/conversation.js';
import { toTimestamp } from '../domain/time.js';
import type { ProcessGroups } from '../engine/processes.js';
import type { LifecycleBase, LifecycleBus, StreamUsage } from '../lifecycle/types.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles, writeConversation } from './conversation-store.js';
import type { EventLog } from './event-log.js';

export interface TurnInput {
  home: string;
  config: Config;
  conversation: ServerConversation;
  prompt: string;
  log: EventLog;
  bus: LifecycleBus;
  groups: ProcessGroups;
  /** Why the turn was stopped from outside (server stopping), read when the agent returns. */
  stopReason: () => string | undefined;
}

export interface TurnOutcome {
  ok: boolean;
  error: string | null;
  interrupted: boolean;
  usage: StreamUsage;
  conversation: ServerConversation;
}

function addStats(stats: ConversationStats, usage: StreamUsage, messages: number): ConversationStats {
  const cache = usage.cache_read_tokens + usage.cache_creation_tokens;
  return {
    ...stats,
    messages_exchanged: stats.messages_exchanged + messages,
    total_input_tokens: stats.total_input_tokens + usage.input_tokens,
    total_output_tokens: stats.total_output_tokens === null || usage.output_tokens === null ? null : stats.total_output_tokens + usage.output_tokens,
    total_cache_tokens: stats.total_cache_tokens + cache,
    cache_read_tokens: stats.cache_read_tokens + usage.cache_read_tokens,
    cache_creation_tokens: stats.cache_creation_tokens + usage.cache_creation_tokens,
    cost_usd: stats.cost_usd === null || usage.cost_usd === null ? null : stats.cost_usd + usage.cost_usd,
    partial: stats.partial || usage.partial,
  };
}

function streamUsage(usage: TokenUsage | undefined, cost: number | undefined): StreamUsage {
  if (!usage) return { input_tokens: 0, output_tokens: null, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: null, partial: true };
  return {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cache_read_tokens: usage.cache_read_input_tokens,
    cache_creation_tokens: usage.cache_creation_input_tokens,
    cost_usd: cost ?? null,
    partial: false,
  };
}

export async function runTurn(input: TurnInput): Promise<TurnOutcome> {
  const { home, config, log, bus, prompt } = input;
  const files = conversationFiles(home, input.conversation.account, input.conversation.id);
  const turn = input.conversation.turns + 1;
  const startedAt = toTimestamp(new Date());
  let conversation: ServerConversation = {
    ...input.conversation,
    status: 'running',
    turns: turn,
    updated_at: startedAt,
    last_turn: { turn, started_at: startedAt, ended_at: null, ok: null, error: null },
  };
  writeConversation(home, conversation);
  const base: LifecycleBase = { task_id: '', step_name: null, conversation_id: conversation.id, workspace: files.workspace, task_dir: files.dir };
  let seq = 0;
  let messages = 0;
  const message = (role: Message['role'], body: string, toolCalls: ToolCall[] = [], key?: string): Message => ({
    key: key ?? `t${turn}-${++seq}`,
    conversation_id: conversation.id,
    body,
    role,
    timestamp: Math.floor(Date.now() / 1000),
    tokens: 0,
    tool_calls: toolCalls,
  });
  // Messages are recorded in order, without holding the stream up.
  let recording: Promise<void> = Promise.resolve();
  const record = (m: Message) => {
    messages++;
    log.append('message', { message: m });
    recording = recording.then(() => bus.message({ ...base, point: 'on_message', message: m }));
  };

  log.append('turn_started', { turn, conversation_id: conversation.id, sandbox_id: conversation.sandbox_id, resumes_session: conversation.session_id || null });
  record(message(MESSAGE_ROLE.user, prompt));

  const tools = new Map<string, ToolCall>();
  let rawOutput = '';
  let assistantTexts = 0;
  let sessionId = conversation.session_id;
  let result: Extract<AgentUpdate, { kind: 'result' }> | undefined;
  const onUpdate = (u: AgentUpdate) => {
    switch (u.kind) {
      case 'session':
        sessionId = u.sessionId;
        break;
      case 'text':
        assistantTexts++;
        record(message(MESSAGE_ROLE.assistant, u.text));
        break;
      case 'tool': {
        const call: ToolCall = { id: u.id ?? `t${turn}-tool-${tools.size + 1}`, type: 'tool_use', name: u.name, input: u.input ?? {}, output: '', status: 'pending', error: '' };
        tools.set(call.id, call);
        log.append('tool_use', { id: call.id, name: call.name, summary: u.summary, input: call.input });
        break;
      }
      case 'tool_result': {
        const call = tools.get(u.id) ?? { id: u.id, type: 'tool_use', name: '', input: {}, output: '', status: 'pending' as const, error: '' };
        const done: ToolCall = { ...call, output: u.text, status: u.isError ? 'error' : 'success', error: u.isError ? u.text : '' };
        tools.set(u.id, done);
        log.append('tool_result', { id: u.id, name: done.name, status: done.status, output: u.text });
        record(message(MESSAGE_ROLE.tool, '', [done]));
        break;
      }
      case 'result':
        result = u;
        if (u.sessionId) sessionId = u.sessionId;
        break;
      case 'raw':
        rawOutput += `${u.text}\n`;
        log.append('output', { text: u.text });
        break;
    }
  };

  const ai = { ...config.ai, agent: conversation.provider };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ATLAS_CONVERSATION_ID: conversation.id,
    ATLAS_TURN: String(turn),
    ...(sessionId ? { ATLAS_SESSION_ID: sessionId } : {}),
  };
  let run: AgentRunResult;
  try {
    if (ai.agent === 'claude') {
      const { runClaude } = await import('../agent/claude.js');
      run = await runClaude(agentInput(input, ai, env, sessionId, onUpdate));
    } else {
      // The command agent's stdout is read as Claude Code's stream-json when it is; other lines are plain output.
      const parser = new ClaudeStreamParser(files.workspace);
      const { runCommandAgent } = await import('../agent/command-agent.js');
      run = await runCommandAgent(
        agentInput(input, ai, env, sessionId, (u) => {
          if (u.kind !== 'raw') return onUpdate(u);
          for (const p of parser.push(u.text)) onUpdate(p);
        }),
      );
      for (const p of parser.end()) onUpdate(p);
    }
  } catch (error) {
    run = { ok: false, exitCode: -1, timedOut: false, output: '', files: [], error: (error as Error).message };
  }
  if (assistantTexts === 0 && rawOutput.trim().length > 0) record(message(MESSAGE_ROLE.assistant, rawOutput.trimEnd()));

  const stopped = input.stopReason();
  const usage = streamUsage(run.usage ?? (result as Extract<AgentUpdate, { kind: 'result' }> | undefined)?.usage, run.costUsd ?? result?.costUsd);
  const error = stopped ? `stopped: ${stopped}` : run.ok ? null : (run.error ?? `the agent exited with code ${run.exitCode}`);
  await recording;
  await bus.streamFinish({ ...base, point: 'on_stream_finish', ok: error === null, usage, error });
  const endedAt = toTimestamp(new Date());
  conversation = {
    ...conversation,
    session_id: sessionId,
    status: stopped ? 'interrupted' : error ? 'failed' : 'completed',
    updated_at: endedAt,
    last_turn: { turn, started_at: startedAt, ended_at: endedAt, ok: error === null, error },
    stats: addStats(conversation.stats, usage, messages),
  };
  writeConversation(home, conversation);
  if (error) log.append('error', { message: error, interrupted: Boolean(stopped) });
  return { ok: error === null, error, interrupted: Boolean(stopped), usage, conversation };
}

function agentInput(input: TurnInput, ai: Config['ai'], env: NodeJS.ProcessEnv, sessionId: string, onUpdate: (u: AgentUpdate) => void): AgentRunInput {
  return {
    prompt: input.prompt,
    ...(sessionId && ai.agent === 'claude' ? { resumeSessionId: sessionId } : {}),
    cwd: conversationFiles(input.home, input.conversation.account, input.conversation.id).workspace,
    env,
    timeoutMs: input.config.ai.timeout,
    ai,
    groups: input.groups,
    onOutput: () => undefined,
    onUpdate,
  };
}

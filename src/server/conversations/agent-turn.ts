// One prompt of a server conversation: one agent run, recorded as a conversation of its own
// (src/conversation/, issue 9) under the server conversation's folder, each run continuing the
// last one's agent session. Claude Code runs headless with --resume from the second prompt on; the
// command agent's stream-json is read the same way. Every message goes through the lifecycle bus
// (OnMessage records it) and out as SSE events; the run ends with OnStreamFinish, and the server
// conversation's totals grow by the run's ledger row.
import { claudeConfigDir } from '../../agent/claude-config-dir.js';
import type { AgentUpdate } from '../../agent/claude-stream.js';
import type { AgentRunResult } from '../../agent/types.js';
import type { Config } from '../../config/schema.js';
import { AgentConversation } from '../../conversation/agent-conversation.js';
import { newConversationId } from '../../conversation/paths.js';
import type { ConversationStats, Message } from '../../domain/conversation.js';
import { MESSAGE_ROLE } from '../../domain/conversation.js';
import { toTimestamp } from '../../domain/time.js';
import type { ProcessGroups } from '../../engine/processes.js';
import type { ProcessExecutor } from '../../exec/types.js';
import type { LifecycleBus } from '../../lifecycle/types.js';
import type { EventLog } from '../state/event-log.js';
import type { ServerState, StoredMessage } from '../state/types.js';
import { keepSession, placeSession } from './claude-session.js';
import { sessionTravels } from './claude-session-sync.js';
import type { ServerConversation } from './conversation-store.js';
import { conversationFiles } from './conversation-store.js';
import { lastRunMessages, nextRunPlace } from './messages.js';
import { CANCEL_REASON } from './turn-slot.js';

export interface TurnInput {
  home: string;
  config: Config;
  /** Where the conversation's record is kept. */
  state: ServerState;
  conversation: ServerConversation;
  prompt: string;
  /** False once the turn's lease was taken over: its end is then not recorded (the new holder's is). */
  holdsLease?: () => boolean;
  /** What became of the Claude Code session's files (refused, not kept): for the server's log. */
  onSessionNote?: (text: string) => void;
  /** A message the state did not take (the turn goes on; its run folder has it). */
  onStoreError?: (error: Error) => void;
  /** The conversation's log, as the turn may write it (fenced by its lease); `start` stores the running record with the first events. */
  log: Pick<EventLog, 'append'> & {
    start: (record: ServerConversation, events: { type: string; data: Record<string, unknown> }[]) => Promise<unknown>;
  };
  bus: LifecycleBus;
  groups: ProcessGroups;
  /** Where the agent runs: the sandbox, or this machine with --local (src/server/conversations/turn-executor.ts). */
  executor: ProcessExecutor;
  /** Why the turn was stopped from outside (server stopping), read when the agent returns. */
  stopReason: () => string | undefined;
}

export interface TurnOutcome {
  ok: boolean;
  error: string | null;
  interrupted: boolean;
  /** This run's ledger row. */
  usage: ConversationStats;
  conversation: ServerConversation;
  /** The run's messages, for the turn's end to store in its transaction (the state's database keeps them). */
  messages: StoredMessage[];
}

/** Totals of two ledger rows: unknown (null) stays unknown, partial stays partial. */
export function addStats(a: ConversationStats, b: ConversationStats): ConversationStats {
  const models = new Map(a.models.map((m) => [m.model, { ...m }]));
  for (const m of b.models) {
    const had = models.get(m.model);
    models.set(
      m.model,
      had
        ? {
            model: m.model,
            input_tokens: had.input_tokens + m.input_tokens,
            output_tokens: had.output_tokens + m.output_tokens,
            cache_read_tokens: had.cache_read_tokens + m.cache_read_tokens,
            cache_creation_tokens: had.cache_creation_tokens + m.cache_creation_tokens,
            cost_usd: had.cost_usd === null || m.cost_usd === null ? null : had.cost_usd + m.cost_usd,
          }
        : { ...m },
    );
  }
  return {
    messages_exchanged: a.messages_exchanged + b.messages_exchanged,
    total_input_tokens: a.total_input_tokens + b.total_input_tokens,
    total_output_tokens:
      a.total_output_tokens === null || b.total_output_tokens === null ? null : a.total_output_tokens + b.total_output_tokens,
    total_cache_tokens: a.total_cache_tokens + b.total_cache_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    cache_creation_tokens: a.cache_creation_tokens + b.cache_creation_tokens,
    cost_usd: a.cost_usd === null || b.cost_usd === null ? null : a.cost_usd + b.cost_usd,
    partial: a.partial || b.partial,
    models: [...models.values()],
  };
}

/** The bus the run records through, also sending each message (and its tool calls) as events. */
function streamingBus(bus: LifecycleBus, log: Pick<EventLog, 'append'>): LifecycleBus {
  // Delegates method by method: the bus may be a class instance, whose methods a spread would lose.
  return {
    coldStart: (event) => bus.coldStart(event),
    streamFinish: (event) => bus.streamFinish(event),
    terminate: (event) => bus.terminate(event),
    message: (event) => {
      const m: Message = event.message;
      // EventLog.append never rejects: a failed append is reported by the log itself.
      void log.append('message', { message: m, run: event.conversation_id });
      if (m.role === MESSAGE_ROLE.assistant) {
        for (const c of m.tool_calls) void log.append('tool_use', { id: c.id, name: c.name, input: c.input });
      } else if (m.role === MESSAGE_ROLE.tool) {
        for (const c of m.tool_calls) void log.append('tool_result', { id: c.id, name: c.name, status: c.status, output: c.output });
      }
      return bus.message(event);
    },
  };
}

/** Lines of a command agent's output that are not stream-json events, for `output` events. */
function plainLines(log: Pick<EventLog, 'append'>): { push(text: string): void; end(): void } {
  let partial = '';
  const emit = (line: string) => {
    if (line.trim().length === 0) return;
    // Only an object can be a stream-json event: a plain line is not parsed (a failed JSON.parse
    // throws, which a chatty agent's thousands of lines pay for on the one thread).
    if (line.trimStart().startsWith('{')) {
      try {
        const v: unknown = JSON.parse(line);
        if (typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>)['type'] === 'string') return;
      } catch {
        // plain text
      }
    }
    // EventLog.append never rejects: a failed append is reported by the log itself.
    void log.append('output', { text: line });
  };
  return {
    push(text) {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) emit(l);
    },
    end() {
      emit(partial);
      partial = '';
    },
  };
}

export async function runTurn(input: TurnInput): Promise<TurnOutcome> {
  const { home, config, log, prompt } = input;
  const files = conversationFiles(home, input.conversation.account, input.conversation.id);
  const turn = input.conversation.turns + 1;
  const startedAt = toTimestamp(new Date());
  const runId = newConversationId();
  const previous = input.conversation.last_turn;
  // Counted before this run's folder is made (from the thread pool).
  const place = nextRunPlace(home, input.conversation.account, input.conversation.id, previous);
  let conversation: ServerConversation = {
    ...input.conversation,
    status: 'running',
    turns: turn,
    updated_at: startedAt,
    last_turn: { turn, started_at: startedAt, ended_at: null, ok: null, error: null, run: runId, run_place: place },
  };
  // A Claude Code session is resumed only where its transcript is: the previous turn may have run
  // on another server, whose session came back from the store with the workspace (claude-session.ts).
  const session = { dir: files.dir, workspace: files.workspace };
  const note = input.onSessionNote ?? (() => undefined);
  const here =
    conversation.provider !== 'claude' || (conversation.session_id !== '' && placeSession(session, conversation.session_id, note));
  const resumeSessionId = (here && conversation.session_id) || undefined;
  // The running record and `turn_started` in one commit; a failure is reported by the log itself.
  const started = await log.start(conversation, [
    {
      type: 'turn_started',
      data: { turn, conversation_id: conversation.id, sandbox_id: conversation.sandbox_id, resumes_session: resumeSessionId ?? null },
    },
  ]);
  if (started === undefined) throw new Error(`turn ${turn} of conversation ${conversation.id} could not be recorded as started`);

  const ai = { ...config.ai, agent: conversation.provider };
  const run = new AgentConversation({
    id: runId,
    // The session resumed is the one the last turn ended with, so the run it continues is that
    // turn's: named by the record, not found by reading every earlier run's (a long conversation's
    // turn would). An older record, or a turn cut off (its agent may have changed session), is looked up.
    ...(resumeSessionId && previous?.run && previous.ended_at !== null ? { continues: previous.run } : {}),
    taskDir: files.dir,
    taskId: '',
    stepName: `turn-${turn}`,
    attempt: turn,
    agent: ai.agent,
    model: ai.model,
    lifecycle: streamingBus(input.bus, log),
    workspace: files.workspace,
    prompt,
    resumeSessionId,
    // The server's one thread never waits on the disk for the run's record (its flush is awaited at the end).
    background: true,
  });
  let sessionId = conversation.session_id;
  const plain = plainLines(log);
  const onUpdate = (u: AgentUpdate) => {
    if (u.kind === 'session') sessionId = u.sessionId;
    else if (u.kind === 'result' && u.sessionId) sessionId = u.sessionId;
    else if (u.kind === 'raw' && ai.agent === 'command') plain.push(`${u.text}`);
    run.update(u);
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ATLAS_CONVERSATION_ID: conversation.id,
    ATLAS_TURN: String(turn),
    ...(resumeSessionId ? { ATLAS_SESSION_ID: resumeSessionId } : {}),
  };
  let result: AgentRunResult;
  try {
    const runAgent =
      ai.agent === 'claude'
        ? (await import('../../agent/claude.js')).runClaude
        : (await import('../../agent/command-agent.js')).runCommandAgent;
    result = await runAgent({
      prompt,
      ...(resumeSessionId && ai.agent === 'claude' ? { resumeSessionId } : {}),
      cwd: files.workspace,
      env,
      timeoutMs: config.ai.timeout,
      ai,
      groups: input.groups,
      executor: input.executor,
      // Sandboxed, Claude Code's hooks cannot write $ATLAS_HOME: they hand their events to the
      // server through a pipe in the conversation's channel/ folder (docs/claude-code.md), the
      // resumed session's accepted though its entry names no task.
      ...(input.executor.mode === 'sandbox' && ai.agent === 'claude'
        ? {
            hookChannel: {
              home,
              taskDir: files.dir,
              worktree: files.workspace,
              claudeConfigDir: claudeConfigDir(env),
              session: resumeSessionId,
            },
          }
        : {}),
      onOutput: () => undefined,
      onUpdate,
    });
  } catch (error) {
    result = { ok: false, exitCode: -1, timedOut: false, output: '', files: [], error: (error as Error).message };
  }
  plain.end();
  if (result.sessionId) sessionId = result.sessionId;
  const stopped = input.stopReason();
  const cancelled = stopped === CANCEL_REASON;
  const error = stopped ? `stopped: ${stopped}` : result.ok ? null : (result.error ?? `the agent exited with code ${result.exitCode}`);
  // The session's files join the conversation's folder before OnStreamFinish pushes them along.
  if (ai.agent === 'claude' && sessionTravels(config)) keepSession(session, sessionId || result.sessionId || '', note);
  const record = await run.end({ ok: error === null, error: error ?? undefined, interrupted: Boolean(stopped), output: result.output });
  // A stopped agent may not have reported what it used: the turn's usage, and the totals, say so.
  const usage = stopped ? { ...record.stats, partial: true } : record.stats;
  // The run's messages, as its folder has them (tool results joined into their calls; the lines the
  // recorder appended, not read back), go into the state, so GET …/messages answers the same on every server.
  // In the state's database they join the turn's end transaction (one commit fewer); elsewhere
  // (DynamoDB) they go now, a failure reported and the turn going on.
  let messages: StoredMessage[] = [];
  if (input.holdsLease?.() !== false) {
    messages = lastRunMessages(home, conversation.account, conversation.id, { id: run.id, place, text: run.recorder.messagesText });
    if (!input.state.messagesInDatabase) {
      await input.state.putMessages(messages).catch((error: Error) => input.onStoreError?.(error));
      messages = [];
    }
  }
  const endedAt = toTimestamp(new Date());
  conversation = {
    ...conversation,
    session_id: sessionId || record.session_id,
    status: cancelled ? 'cancelled' : stopped ? 'interrupted' : error ? 'failed' : 'completed',
    updated_at: endedAt,
    last_turn: { turn, started_at: startedAt, ended_at: endedAt, ok: error === null, error, run: runId, run_place: place },
    stats: addStats(conversation.stats, usage),
  };
  // The final record is written by the caller, with the turn's last events, in one transaction.
  // EventLog.append never rejects: a failed append is reported by the log itself.
  if (error) void log.append('error', { message: error, interrupted: Boolean(stopped) });
  return { ok: error === null, error, interrupted: Boolean(stopped), usage, conversation, messages };
}

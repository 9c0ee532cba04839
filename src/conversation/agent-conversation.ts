// One agent run as a conversation: opened before the agent starts (the prompt is its first
// message), fed the agent's updates as they stream, ended when the stream ends, well or not. Every
// message goes through the lifecycle bus (OnMessage), whose built-in default records it; the end
// goes through OnStreamFinish with the run's usage.
import type { AgentUpdate } from '../agent/claude-stream.js';
import type { ConversationRecord, Message, PermissionDenial } from '../domain/conversation.js';
import { MESSAGE_ROLE } from '../domain/conversation.js';
import type { LifecycleBase, LifecycleBus } from '../lifecycle/types.js';
import { closeConversation, markInterrupted, openConversation } from './bus.js';
import { ClaudeEventReader } from './claude-events.js';
import { streamUsageOf } from './ledger.js';
import { conversationOfSession } from './read.js';
import type { ConversationStart } from './recorder.js';
import { ConversationRecorder } from './recorder.js';

export interface AgentConversationStart extends Omit<ConversationStart, 'sessionId' | 'continues' | 'now'> {
  lifecycle: LifecycleBus;
  workspace: string;
  prompt: string;
  /** The agent session this run resumes: the conversation that had it is the one this continues. */
  resumeSessionId?: string | undefined;
  /** A new session's id atlas chose (Claude Code --session-id), recorded from the start. */
  newSessionId?: string | undefined;
  /**
   * The run this one continues, where the caller keeps it (a server's conversation names its last
   * turn's run): no earlier run's record is read. Default: the latest run of the resumed session.
   */
  continues?: string | null | undefined;
}

export interface AgentRunEnd {
  ok: boolean;
  error?: string | undefined;
  interrupted: boolean;
  /** A command agent's stdout: its answer, when it printed no stream-json. */
  output?: string;
}

const now = () => Math.floor(Date.now() / 1000);

export class AgentConversation {
  readonly recorder: ConversationRecorder;
  private readonly reader: ClaudeEventReader;
  private readonly base: LifecycleBase;
  private readonly pending = new Set<Promise<void>>();
  private readonly denials: PermissionDenial[] = [];
  private events = 0;

  constructor(private readonly start: AgentConversationStart) {
    const continues =
      start.continues !== undefined
        ? start.continues
        : start.resumeSessionId
          ? (conversationOfSession(start.taskDir, start.resumeSessionId)?.id ?? null)
          : null;
    this.recorder = new ConversationRecorder({
      taskDir: start.taskDir,
      taskId: start.taskId,
      stepName: start.stepName,
      attempt: start.attempt,
      agent: start.agent,
      model: start.model,
      ...(start.resumeSessionId || start.newSessionId ? { sessionId: start.resumeSessionId ?? start.newSessionId } : {}),
      continues,
      ...(start.id ? { id: start.id } : {}),
      background: start.background === true,
    });
    openConversation(this.recorder);
    this.base = {
      task_id: start.taskId,
      step_name: start.stepName,
      conversation_id: this.recorder.id,
      workspace: start.workspace,
      task_dir: start.taskDir,
    };
    this.reader = new ClaudeEventReader(this.recorder.id, {
      message: (message) => this.emit(message),
      call: (messageId, usage, model) => {
        this.recorder.setModel(model);
        this.recorder.addCall(messageId, usage);
      },
      session: (sessionId, model) => {
        this.recorder.setSession(sessionId);
        this.recorder.setModel(model);
      },
      result: (figures, denials) => {
        if (figures) this.recorder.setResult(figures);
        this.recorder.addPermissionDenials(denials);
        this.denials.push(...denials.filter((d) => !this.denials.some((k) => k.tool_use_id === d.tool_use_id && d.tool_use_id !== '')));
      },
    });
    this.emit({
      key: 'prompt',
      conversation_id: this.recorder.id,
      body: start.prompt,
      role: MESSAGE_ROLE.user,
      timestamp: now(),
      tokens: 0,
      tool_calls: [],
    });
  }

  get id(): string {
    return this.recorder.id;
  }

  /** Tool calls the agent was refused in this run. */
  get permissionDenials(): readonly PermissionDenial[] {
    return this.denials;
  }

  /** Feed every update of the agent run (only stream-json events matter here). */
  update(update: AgentUpdate): void {
    if (update.kind !== 'event') return;
    this.events++;
    this.reader.event(update.event);
  }

  /** Ends the run: OnStreamFinish with its usage; returns the conversation as recorded. */
  async end(end: AgentRunEnd): Promise<ConversationRecord> {
    try {
      this.reader.end();
      if (this.events === 0 && end.output && end.output.trim().length > 0) {
        this.emit({
          key: 'output',
          conversation_id: this.id,
          body: end.output,
          role: MESSAGE_ROLE.assistant,
          timestamp: now(),
          tokens: 0,
          tool_calls: [],
        });
      }
      await Promise.allSettled([...this.pending]);
      // Claude Code killed before its result: the row takes what its transcript says it was answered.
      this.recorder.settleFromTranscript();
      if (end.interrupted) markInterrupted(this.id);
      const usage = streamUsageOf(this.recorder.current.stats, !this.recorder.reportedTokens);
      await this.start.lifecycle.streamFinish({
        ...this.base,
        point: 'on_stream_finish',
        ok: end.ok,
        usage,
        error: end.ok ? null : (end.error ?? 'the agent failed'),
      });
      // A bus without the recording default (or one that failed) still leaves a finished record.
      if (!this.recorder.ended) this.recorder.finish(end.ok ? 'completed' : end.interrupted ? 'interrupted' : 'failed');
      await this.recorder.flushed();
    } finally {
      closeConversation(this.id);
    }
    return this.recorder.current as ConversationRecord;
  }

  private emit(message: Message): void {
    // OnMessage never fails the run; hooks finish in their own time, awaited before the stream's end.
    const done: Promise<void> = this.start.lifecycle
      .message({ ...this.base, point: 'on_message', message })
      .catch(() => {})
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }
}

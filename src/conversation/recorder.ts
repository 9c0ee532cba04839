// One conversation on disk while its agent runs. conversation.json is written atomically at the
// start, whenever the ledger or the session changes (in the background: within a second), and at
// the end; messages.jsonl gets one whole line per message, appended as the stream arrives. An
// assistant message that called tools is held until each call's result has been joined to it (by
// tool_use id), so its line carries the outputs: a crash loses at most that message in flight (its
// tokens are already in the record).
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { ConversationRecord, ConversationStats, ConversationStatus, Message, PermissionDenial } from '../domain/conversation.js';
import { emptyStats } from '../domain/conversation.js';
import { writeAllSync, writeFileAtomic } from '../store/atomic-write.js';
import { BackgroundFile, openFd } from '../store/atomic-write-async.js';
import { cutOffRunStats } from './claude-transcript-usage.js';
import type { CallUsage, ResultFigures } from './ledger.js';
import { RunningLedger, tokenlessStats } from './ledger.js';
import { conversationFiles, newConversationId } from './paths.js';

/**
 * In the background, a change of the session or the figures reaches conversation.json within this
 * long (the messages are appended as they come; the start and the end are written at once).
 */
const BACKGROUND_SETTLE_MS = 1000;

export interface ConversationStart {
  taskDir: string;
  taskId: string;
  stepName: string;
  attempt: number;
  /** "claude" or "command". */
  agent: string;
  model: string;
  sessionId?: string;
  continues: string | null;
  /** Default: now. */
  now?: () => Date;
  /** Default: a new conv- id. */
  id?: string;
  /**
   * Make the run's folder and write its files from libuv's thread pool (a server, whose one thread
   * must not wait on the disk): the folder, then conversation.json and messages.jsonl, the messages
   * that came meanwhile written once it is open and each later one appended as it comes; flushed()
   * says when all is on disk. Default: synchronously, as each change is made.
   */
  background?: boolean;
}

export class ConversationRecorder {
  readonly files: ReturnType<typeof conversationFiles>;
  private record: ConversationRecord;
  private readonly ledger = new RunningLedger();
  private readonly written = new Set<string>();
  /** Tool calls whose results are in a written message: a result seen again is not written again. */
  private readonly settledCalls = new Set<string>();
  /** Assistant messages waiting for tool results, by tool_use id. */
  private readonly held = new Map<string, Message>();
  private fd: number | undefined;
  private tokens = false;
  /** Figures of a run cut off before its result, from the agent's own transcript. */
  private cutOff: ((messages: number) => ConversationStats) | undefined;
  private readonly now: () => Date;
  private readonly background: BackgroundFile | undefined;
  /** In the background: messages.jsonl being opened, and the lines waiting for it. */
  private opening: Promise<void> | undefined;
  private lines = '';
  /** In the background: every line appended, so the run's messages need not be read back. */
  private recorded = '';
  private appendFailure: Error | undefined;

  constructor(start: ConversationStart) {
    this.now = start.now ?? (() => new Date());
    const id = start.id ?? newConversationId();
    this.files = conversationFiles(start.taskDir, id);
    const folder = start.background ? mkdir(this.files.dir, { recursive: true }) : undefined;
    this.background = folder ? new BackgroundFile(this.files.record, undefined, BACKGROUND_SETTLE_MS, folder) : undefined;
    this.record = {
      id,
      task_id: start.taskId,
      step_name: start.stepName,
      attempt: start.attempt,
      agent: start.agent,
      model: start.model,
      session_id: start.sessionId ?? '',
      started_at: this.now().toISOString(),
      ended_at: null,
      status: 'running',
      continues: start.continues,
      // Until the run ends, its row is partial: nothing final is known yet.
      stats: { ...emptyStats(), total_output_tokens: null, cost_usd: null, partial: true },
    };
    // Claude Code always reports tokens, at its result: a run of it with none was cut off before
    // any answer, and its row is partial like any other cut-off run's (not a tokenless 0, final).
    this.tokens = start.agent === 'claude';
    if (folder && this.background) {
      // The first record is written at once but not fsynced (the last one is, before the run ends;
      // a server's own record of the conversation is in its state).
      this.background.save(this.text(), false, true);
      this.opening = this.opened(folder.then(() => openFd(this.files.messages, 'a', 0o644)));
      return;
    }
    mkdirSync(this.files.dir, { recursive: true });
    this.fd = openSync(this.files.messages, 'a', 0o644);
    // A run's folder never shows without its record.
    this.save(true);
  }

  get id(): string {
    return this.record.id;
  }

  get current(): Readonly<ConversationRecord> {
    return this.record;
  }

  get ended(): boolean {
    return this.record.status !== 'running';
  }

  setSession(sessionId: string): void {
    if (sessionId.length === 0 || sessionId === this.record.session_id) return;
    this.record = { ...this.record, session_id: sessionId };
    this.save(false);
  }

  setModel(model: string): void {
    if (model.length === 0 || model === this.record.model) return;
    this.record = { ...this.record, model };
    this.save(false);
  }

  /** The built-in OnMessage: append the message (joining tool results into their assistant message). */
  recordMessage(message: Message): void {
    if (this.ended || this.written.has(message.key)) return;
    if (message.role === 3) {
      if (message.tool_calls.length > 0 && message.tool_calls.every((c) => this.settledCalls.has(c.id))) return;
      let joinedAny = false;
      for (const call of message.tool_calls) {
        const owner = this.held.get(call.id);
        if (!owner) continue;
        joinedAny = true;
        this.held.delete(call.id);
        owner.tool_calls = owner.tool_calls.map((c) =>
          c.id === call.id ? { ...c, output: call.output, status: call.status, error: call.error } : c,
        );
        if (!owner.tool_calls.some((c) => this.held.get(c.id) === owner)) this.append(owner);
      }
      if (!joinedAny) this.append(message);
      return;
    }
    const pending = message.role === 2 ? message.tool_calls.filter((c) => c.status === 'pending') : [];
    if (pending.length === 0) {
      this.append(message);
      return;
    }
    const held: Message = { ...message, tool_calls: [...message.tool_calls] };
    for (const call of pending) this.held.set(call.id, held);
  }

  /** One API call's input side, counted once per message id; the record is rewritten when it is new. */
  addCall(messageId: string, usage: CallUsage): void {
    if (this.ended) return;
    this.tokens = true;
    if (this.ledger.addCall(messageId, usage)) this.saveStats(false);
  }

  setResult(figures: ResultFigures): void {
    if (this.ended) return;
    this.tokens = true;
    this.ledger.setResult(figures);
    this.saveStats(false);
  }

  /** Every denial, once (by tool_use id). */
  addPermissionDenials(denials: readonly PermissionDenial[]): void {
    if (denials.length === 0 || this.ended) return;
    const known = new Set((this.record.permission_denials ?? []).map((d) => d.tool_use_id));
    const added = denials.filter((d) => !known.has(d.tool_use_id) || d.tool_use_id === '');
    if (added.length === 0) return;
    this.record = { ...this.record, permission_denials: [...(this.record.permission_denials ?? []), ...added] };
    this.save(false);
  }

  /**
   * A Claude Code run that ended without its final result (killed): its row takes the session
   * transcript's figures for this run's messages, still partial (claude-transcript-usage.ts).
   */
  settleFromTranscript(env: NodeJS.ProcessEnv = process.env): void {
    if (this.ended || this.record.agent !== 'claude' || !this.record.session_id) return;
    const stats = this.tokens ? this.ledger.stats(this.written.size) : undefined;
    if (stats && !stats.partial) return; // the result came: it is the truth
    const base = stats ?? this.ledger.stats(this.written.size);
    const settled = cutOffRunStats(base, this.record.session_id, this.record.started_at, env);
    if (settled === base) return;
    this.tokens = true;
    this.cutOff = (messages) => ({ ...settled, messages_exchanged: messages });
    this.saveStats(false);
  }

  /** Whether the agent reported any tokens (false: a command agent without stream-json). */
  get reportedTokens(): boolean {
    return this.tokens;
  }

  /**
   * The built-in OnStreamFinish: messages still waiting for tool results are written as they are
   * (their calls stay pending), the ledger row is final (or partial) and the record says how it ended.
   */
  finish(status: Exclude<ConversationStatus, 'running'>): ConversationRecord {
    if (this.ended) return this.record;
    const waiting = [...new Set(this.held.values())];
    this.held.clear();
    for (const message of waiting) this.append(message);
    this.record = {
      ...this.record,
      status,
      ended_at: this.now().toISOString(),
      stats: this.cutOff
        ? this.cutOff(this.written.size)
        : this.tokens
          ? this.ledger.stats(this.written.size)
          : tokenlessStats(this.written.size),
    };
    this.save(true);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    return this.record;
  }

  private append(message: Message): void {
    const fd = this.fd;
    if (this.written.has(message.key) || this.ended || (fd === undefined && this.opening === undefined)) return;
    this.written.add(message.key);
    for (const call of message.tool_calls) if (call.status !== 'pending') this.settledCalls.add(call.id);
    const line = `${JSON.stringify(message)}\n`;
    if (this.background) this.recorded += line;
    // In the background, until messages.jsonl is open, the lines wait for it.
    if (fd === undefined) this.lines += line;
    else writeAllSync(fd, line);
  }

  private saveStats(durable: boolean): void {
    const stats = this.cutOff
      ? this.cutOff(this.written.size)
      : this.tokens
        ? this.ledger.stats(this.written.size)
        : { ...this.record.stats, messages_exchanged: this.written.size };
    this.record = { ...this.record, stats };
    this.save(durable);
  }

  /** In the background, messages.jsonl's text as appended (the same lines, not read back); otherwise undefined. */
  get messagesText(): string | undefined {
    return this.background ? this.recorded : undefined;
  }

  /**
   * messages.jsonl opened from the thread pool: the lines that waited for it are written, and from
   * then on each message as it comes (an append to a file that exists: no wait on a busy disk), so
   * a crash loses at most the message in flight, as with the synchronous recorder.
   */
  private async opened(file: Promise<number>): Promise<void> {
    try {
      const fd = await file;
      const waiting = this.lines;
      this.lines = '';
      try {
        writeAllSync(fd, waiting);
      } finally {
        // Ended meanwhile (finish() had no descriptor to close): nothing more comes.
        if (this.ended) closeSync(fd);
        else this.fd = fd;
      }
    } catch (error) {
      this.appendFailure ??= error as Error;
      this.lines = '';
    }
  }

  /**
   * Resolves once conversation.json holds the latest record, and, once the run has ended, every
   * message is in messages.jsonl (at once unless written in the background); rejects with what failed.
   */
  async flushed(): Promise<void> {
    if (!this.background) return;
    await this.background.flushed();
    await this.opening;
    if (this.appendFailure) throw this.appendFailure;
  }

  private text(): string {
    return `${JSON.stringify(this.record, null, 2)}\n`;
  }

  private save(durable: boolean): void {
    if (this.background) this.background.save(this.text(), durable);
    else writeFileAtomic(this.files.record, this.text(), { durable });
  }
}

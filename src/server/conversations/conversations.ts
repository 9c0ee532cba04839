// Conversations of the server (seed 000 Phases 6-7): get or create the conversation, make sure it
// has a sandbox (a new workspace runs OnColdStart, and a failure removes what was created), run
// one turn at a time with the server as the conversation's live owner, and detect turns whose
// server died so they can be recovered.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { emptyStats, MESSAGE_ROLE } from '../../domain/conversation.js';
import { toTimestamp } from '../../domain/time.js';
import { ProcessGroups } from '../../exec/process-groups.js';
import { claimOwner } from '../../liveness/claim.js';
import { GroupJournal, withJournalGroups } from '../../liveness/group-journal.js';
import { releaseOwner } from '../../liveness/owner.js';
import { killLeftoverProcesses } from '../../recovery/leftovers.js';
import type { ServerContext } from '../http/context.js';
import { HttpError } from '../http/http.js';
import type { EventLog } from '../state/event-log.js';
import { logKey } from '../state/types.js';
import type { Provider, ServerConversation } from './conversation-store.js';
import {
  conversationFiles,
  conversationsDir,
  listConversations,
  processGroupsDir,
  readConversation,
  removeConversation,
} from './conversation-store.js';
import { conversationMessages } from './messages.js';
import type { CutOff } from './turn-interrupt.js';
import { interruptIfCut } from './turn-interrupt.js';
import { claimTurnLease, holderOf, requireFence } from './turn-lease.js';
import type { Running } from './turn-slot.js';
import { CANCEL_REASON, conversationKey, ownerLeaseSettings, turnLeaseSettings } from './turn-slot.js';

export interface TurnRequest {
  account: string;
  conversationId: string;
  sandboxId: string;
  prompt: string;
  provider?: Provider | undefined;
  agentId?: string | undefined;
  /** The client went away: a request still waiting for a slot leaves the queue. */
  aborted?: AbortSignal | undefined;
  /** Called once the turn has its running slot (past the account's queue): its stream counts from then. */
  admitted?: (() => void) | undefined;
}

export interface StartedTurn {
  log: EventLog;
  /** The log's last id before the turn: the turn's events come after it. */
  fromId: number;
  done: Promise<void>;
}

const RECOVERY_HEADER = 'The previous turn of this conversation was interrupted before it finished (the server running it stopped).';

/** The modules a turn runs on (loaded once the server listens: Conversations.preload). */
interface TurnCode {
  run: typeof import('./turn-run.js');
  sandbox: typeof import('./conversation-sandbox.js');
}

export class Conversations {
  private readonly running = new Map<string, Running>();
  /** Looks for a cut-off turn under way, by conversation. */
  private readonly detecting = new Map<string, Promise<CutOff>>();
  /** Conversations whose sandbox this process has already started (OnColdStart ran). */
  private readonly warm = new Set<string>();
  /** What runs a turn, once loaded (preload). */
  private turnCode: TurnCode | undefined;

  /** Told of each turn this server marks interrupted (server.auto_recover recovers it, lease-sweep.ts). */
  onInterrupted: ((c: ServerConversation) => void) | undefined;

  /** The process groups of this server's turns, one file for all of them. */
  private readonly journal: GroupJournal;

  constructor(private readonly ctx: ServerContext) {
    this.journal = new GroupJournal(processGroupsDir(ctx.home));
  }

  /** The server stops: with no turn running, its record of process groups goes. */
  closeJournal(): void {
    if (this.running.size === 0) this.journal.close();
  }

  /** Turns running here (not those waiting in their account's queue). */
  get runningCount(): number {
    let n = 0;
    for (const slot of this.running.values()) if (slot.admitted) n++;
    return n;
  }

  isRunning(account: string, id: string): boolean {
    return this.running.has(conversationKey(account, id));
  }

  logOf(account: string, id: string): EventLog {
    return this.ctx.logs.get(logKey.conversation(account, id));
  }

  /**
   * Loads what runs a turn (the agent, its recording, its executor, the lifecycle buses): just
   * after the server listens, or by the first turn, not in the start-up; once loaded, a turn
   * starts without a wait.
   */
  async preload(): Promise<TurnCode> {
    if (this.turnCode) return this.turnCode;
    const [run, sandbox] = await Promise.all([import('./turn-run.js'), import('./conversation-sandbox.js'), this.ctx.lifecycleReady()]);
    this.turnCode = { run, sandbox };
    return this.turnCode;
  }

  async startTurn(request: TurnRequest): Promise<StartedTurn> {
    const { run, sandbox } = this.turnCode ?? (await this.preload());
    const { home } = this.ctx;
    const k = conversationKey(request.account, request.conversationId);
    if (this.ctx.stopping)
      throw new HttpError(503, 'server_stopping', 'the server is stopping; retry on another server or after the restart');
    if (this.running.has(k))
      throw new HttpError(
        409,
        'turn_running',
        `conversation ${request.conversationId} is already answering a prompt; wait for its usage event`,
      );
    const files = conversationFiles(home, request.account, request.conversationId);
    // Claimed in this process before the first await: a second request here gets 409 ...
    // Its OnStreamFinish push publishes only while the database gives its lease the turn's token.
    const fenced = async () => {
      if (slot.lease) await requireFence(await this.ctx.state(), slot.lease.fence, this.ctx.log);
    };
    const slot: Running = {
      groups: new ProcessGroups(),
      bus: this.ctx.lifecycle(fenced),
      stopReason: undefined,
      done: Promise.resolve(),
      release: () => undefined,
    };
    this.running.set(k, slot);
    let existing: ServerConversation | undefined;
    try {
      existing = await readConversation(await this.ctx.state(), request.account, request.conversationId);
    } catch (error) {
      this.running.delete(k);
      throw error;
    }
    if (existing?.sandbox_id && existing.sandbox_id !== request.sandboxId) {
      this.running.delete(k);
      throw new HttpError(
        409,
        'sandbox_mismatch',
        `conversation ${request.conversationId} runs in sandbox ${existing.sandbox_id}, not ${request.sandboxId}`,
        { sandbox_id: existing.sandbox_id },
      );
    }
    // The journal file this turn's owner.json names, once claimed (given back as the turn ends).
    let journal: string | undefined;
    try {
      // A slot of the account's running work, held until the agent has stopped (not the stream).
      slot.release = await this.ctx.work.acquire(request.account, request.aborted);
      slot.admitted = true;
      request.admitted?.();
      // ... and across processes through owner.json, taken under a lock (a lease: another server
      // gets it only once this one is gone or its heartbeat stale).
      // From the thread pool: even a folder that exists costs a busy disk's lookup.
      await mkdir(files.dir, { recursive: true, mode: 0o700 });
      journal = this.journal.take();
      const claim = await claimOwner(files.owner, ownerLeaseSettings(this.ctx.config), { process_groups_file: journal });
      if (!claim.ok) {
        throw new HttpError(
          409,
          'turn_running',
          `conversation ${request.conversationId} is being answered by another server: retry once its turn has ended`,
        );
      }
      killLeftoverProcesses(withJournalGroups(this.journal.dir, claim.previous, files.owner));
      const state = await this.ctx.state();
      const leaseName = logKey.conversation(request.account, request.conversationId);
      // The previous owner's process is gone (claimOwner checked): its lease goes with it.
      if (claim.previous) await state.breakLease(leaseName, holderOf(claim.previous));
      const held = await claimTurnLease(state, leaseName, turnLeaseSettings(this.ctx.config), this.ctx.log);
      if (!held.ok) {
        releaseOwner(files.owner);
        throw new HttpError(
          409,
          'turn_running',
          `conversation ${request.conversationId} is being answered by another server: retry once its turn has ended`,
        );
      }
      slot.lease = held.lease;
      const now = toTimestamp(new Date());
      let conversation: ServerConversation = existing ?? {
        id: request.conversationId,
        account: request.account,
        agent_id: request.agentId ?? null,
        provider: request.provider ?? this.ctx.config.ai.agent,
        sandbox_id: null,
        session_id: '',
        created_at: now,
        updated_at: now,
        status: 'idle',
        turns: 0,
        last_turn: null,
        stats: emptyStats(),
      };
      if (request.provider && existing && request.provider !== existing.provider)
        conversation = { ...conversation, provider: request.provider, session_id: '' };
      conversation = await sandbox.ensureSandbox(this.ctx, this.warm, conversation, request.sandboxId, existing === undefined, slot.bus);
      const log = this.logOf(request.account, request.conversationId);
      // From the file, not this process's cache: the previous turn may have run on another server,
      // and its usage event must not end this turn's stream.
      const fromId = await log.readLastId();
      const journalName = journal;
      slot.done = run.runConversationTurn(this.ctx, conversation, request.prompt, slot, log, claim.owner, {
        processGroups: (groups) => this.journal.record(journalName, files.owner, groups),
        ended: () => {
          this.running.delete(k);
          this.journal.release(journalName);
        },
        interrupted: (c) => this.onInterrupted?.(c),
      });
      return { log, fromId, done: slot.done };
    } catch (error) {
      this.running.delete(k);
      if (journal !== undefined) this.journal.release(journal);
      slot.release();
      await slot.lease?.release();
      if (!(error instanceof HttpError && error.code === 'turn_running')) releaseOwner(files.owner);
      throw error;
    }
  }

  /** Continues a turn that was cut off (server stopped or died), resuming the agent's session. */
  async recover(account: string, id: string, aborted?: AbortSignal): Promise<StartedTurn> {
    const conversation = await this.detect(account, id);
    if (!conversation) throw new HttpError(404, 'not_found', `no conversation ${id}`);
    if (conversation.status !== 'interrupted') {
      throw new HttpError(
        409,
        'nothing_to_recover',
        `conversation ${id} is ${conversation.status}; only an interrupted turn can be recovered`,
      );
    }
    // The person's own last request (a recovery that was cut off too quotes it, not itself).
    const lastPrompt =
      [...(await conversationMessages(await this.ctx.state(), this.ctx.home, account, id))]
        .reverse()
        .find((m) => m.role === MESSAGE_ROLE.user && !m.body.startsWith(RECOVERY_HEADER))?.body ?? '';
    const prompt = [
      RECOVERY_HEADER,
      'Check the workspace for what was already done, then finish that request. It was:',
      '',
      lastPrompt,
    ].join('\n');
    return this.startTurn({ account, conversationId: id, sandboxId: conversation.sandbox_id ?? id, prompt, aborted });
  }

  /** The conversation, with a turn whose server died marked interrupted. */
  async detect(account: string, id: string): Promise<ServerConversation | undefined> {
    return this.withTurnHere((await this.interruptIfCut(account, id)).conversation);
  }

  /**
   * A turn admitted here runs from the moment its stream opens, a little before its start is
   * stored: a client that reads the conversation then must not see it idle (nor take its slot as free).
   */
  private withTurnHere<C extends ServerConversation | undefined>(c: C): C {
    if (!c || c.status === 'running' || !this.running.get(conversationKey(c.account, c.id))?.admitted) return c;
    return { ...c, status: 'running' };
  }

  /** detect, saying if this call marked it (concurrent calls here share one look: see turn-interrupt.ts). */
  interruptIfCut(account: string, id: string): Promise<CutOff> {
    const k = conversationKey(account, id);
    let pending = this.detecting.get(k);
    if (!pending) {
      pending = interruptIfCut(this.ctx, account, id, {
        running: this.running.has(k),
        ttlMs: turnLeaseSettings(this.ctx.config).ttlMs,
        onInterrupted: this.onInterrupted,
      }).finally(() => this.detecting.delete(k));
      this.detecting.set(k, pending);
    }
    return pending;
  }

  /** Every conversation of every account whose turn was cut off (just after start-up). */
  async findInterrupted(): Promise<ServerConversation[]> {
    const state = await this.ctx.state();
    const out: ServerConversation[] = [];
    for (const account of await state.listAccounts()) {
      for (const c of await listConversations(state, account.name)) {
        const d = c.status === 'running' ? await this.detect(account.name, c.id) : c;
        if (d?.status === 'interrupted') out.push(d);
      }
    }
    return out;
  }

  async list(account: string): Promise<ServerConversation[]> {
    const all = await listConversations(await this.ctx.state(), account);
    return Promise.all(all.map(async (c) => (c.status === 'running' ? ((await this.detect(account, c.id)) ?? c) : this.withTurnHere(c))));
  }

  async remove(account: string, id: string, terminate: boolean): Promise<void> {
    const c = await this.detect(account, id);
    if (!c) throw new HttpError(404, 'not_found', `no conversation ${id}`);
    if (this.running.has(conversationKey(account, id)))
      throw new HttpError(409, 'turn_running', `conversation ${id} is answering a prompt; delete it after its usage event`);
    const files = conversationFiles(this.ctx.home, account, id);
    if (terminate && c.sandbox_id) {
      // OnTerminate's hooks see the workspace one last time; then it goes.
      const { sandbox } = await this.preload();
      await this.ctx
        .lifecycle()
        .terminate({ ...sandbox.lifecycleBase(this.ctx.home, c), point: 'on_terminate', reason: 'workspace_removed' });
      rmSync(files.workspace, { recursive: true, force: true });
    } else if (c.sandbox_id && existsSync(files.workspace)) {
      // Not terminated: the sandbox's workspace is kept, out of the deleted conversation's folder.
      const kept = join(conversationsDir(this.ctx.home, account), '..', 'sandboxes', `${c.sandbox_id}-${Date.now()}`);
      mkdirSync(dirname(kept), { recursive: true });
      renameSync(files.workspace, kept);
    }
    // Its events go; the log's counter stays, so a conversation made again with this id goes on
    // from the last id and a client's Last-Event-ID neither skips nor repeats events.
    this.ctx.logs.forget(logKey.conversation(account, id));
    await (await this.ctx.state()).dropEvents(logKey.conversation(account, id));
    this.warm.delete(conversationKey(account, id));
    await removeConversation(await this.ctx.state(), this.ctx.home, account, id);
  }

  /**
   * Stops the running turn of a conversation: its agent is stopped (SIGTERM, then SIGKILL), the
   * workspace pushed as after any turn (OnStreamFinish), and the turn ends `cancelled` with a
   * `cancelled` event before its usage. Resolves once the turn has ended.
   */
  async cancel(account: string, id: string): Promise<ServerConversation> {
    const k = conversationKey(account, id);
    const slot = this.running.get(k);
    if (!slot) {
      if (!(await readConversation(await this.ctx.state(), account, id))) throw new HttpError(404, 'not_found', `no conversation ${id}`);
      throw new HttpError(409, 'not_running', `conversation ${id} has no running turn to cancel`);
    }
    slot.stopReason = CANCEL_REASON;
    slot.groups.terminateAll();
    await slot.done;
    const c = await readConversation(await this.ctx.state(), account, id);
    if (!c) throw new HttpError(404, 'not_found', `no conversation ${id}`);
    return c;
  }

  /** Stops every running turn (grace period over): recorded as interrupted, recoverable. */
  stopAll(reason: string): void {
    for (const slot of this.running.values()) {
      slot.stopReason = reason;
      slot.groups.terminateAll();
    }
  }

  async settled(): Promise<void> {
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}

// The append-only event log of a conversation, a task or an account, in the server state
// (src/server/state): ids a sequence from 1 per log, assigned by the database, so every server on
// one state hands out each id once. A stream replays what came after Last-Event-ID and then gets
// new events live: a follower takes events strictly in id order, so an event appended meanwhile,
// here or by another server, is neither lost nor sent twice.
import type { ConversationRow, CopyTo, EventRow, Fence, ServerState, StoredMessage } from './types.js';

type TurnEvent = { type: string; data: Record<string, unknown> };

/** A log that gets a copy of each event appended here, in the same transaction (the account's log). */
export interface Mirror {
  to: CopyTo;
  log: EventLog;
}

export type StoredEvent = EventRow;

export type Listener = (event: StoredEvent) => void;

export const EVENTS_FILE_NAME = 'events.jsonl';

/** Pause between reads of the state while a follower waits for an id another process appended. */
const GAP_POLL_MS = 100;
/** Pause between reads of the state while following a turn that runs on another server. */
const REMOTE_POLL_MS = 200;
const PAGE = 1_000;
/** At most this many events in one transaction: one commit's work stays a few milliseconds. */
const BATCH = 256;

interface Waiting {
  type: string;
  data: Record<string, unknown>;
  fence: Fence | undefined;
  resolve: (event: StoredEvent | undefined) => void;
}

function sameFence(a: Fence | undefined, b: Fence | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.lease === b.lease && a.token === b.token);
}

interface Follower {
  cursor: number;
  pending: Map<number, StoredEvent>;
  listener: Listener;
  /** Only what this process appends from now on, in the order appended (no gaps to wait for). */
  localOnly: boolean;
  closed: boolean;
  remote: boolean;
}

export class EventLog {
  private last = 0;
  private readonly followers = new Set<Follower>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Appends not yet stored, in the order asked for. */
  private readonly waiting: Waiting[] = [];
  /**
   * One reader of the state for every follower of this log: a gap to fill, or (while some
   * follower follows a turn running on another server) every REMOTE_POLL_MS.
   */
  private remoteFollowers = 0;
  private remoteTimer: NodeJS.Timeout | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private pollAgain = false;

  constructor(
    readonly key: string,
    private readonly state: () => Promise<ServerState>,
    private readonly onError: (error: Error) => void,
    /** Where this log's appends are copied in their own transaction, and that log here (to deliver the copies). */
    private readonly mirror?: Mirror,
  ) {}

  /** The last id this process has seen (appended or read). */
  get lastId(): number {
    return this.last;
  }

  /** The state's last id now: another server may have appended since. */
  async readLastId(): Promise<number> {
    this.last = Math.max(this.last, await (await this.state()).lastEventId(this.key));
    return this.last;
  }

  /**
   * Appends after every earlier append of this process to this log (ids follow the order of the
   * calls). With a fence, only while that lease token is current. Never rejects: a failed append
   * (the database down, the lease lost) is reported, and resolves undefined.
   *
   * Group commit: appends wait (in order) for the next pass of the event loop and are stored
   * together, in one transaction per fence and at most BATCH events, so a chatty turn costs one
   * commit per batch, not one per event, and the loop never waits on a commit per event. Followers
   * get an event only once its batch has committed: a client is never sent an event a crash could lose.
   */
  append(type: string, data: Record<string, unknown>, fence?: Fence): Promise<StoredEvent | undefined> {
    return new Promise((resolve) => {
      this.waiting.push({ type, data, fence, resolve });
      if (this.waiting.length > 1) return;
      // The first of a batch schedules its store: what is appended until it runs joins it.
      const scheduled = new Promise<void>((run) => setImmediate(run));
      void this.enqueue(() => scheduled.then(() => this.storeWaiting()));
    });
  }

  /** Stores what waits, BATCH events per transaction, each run of one fence together. */
  private async storeWaiting(): Promise<void> {
    while (this.waiting.length > 0) {
      const fence = this.waiting[0]!.fence;
      let n = 1;
      while (n < this.waiting.length && n < BATCH && sameFence(this.waiting[n]!.fence, fence)) n++;
      const batch = this.waiting.splice(0, n);
      try {
        const stored = await (await this.state()).appendEvents(this.key, batch, fence, this.mirror?.to);
        for (const [i, e] of stored.entries()) batch[i]!.resolve(this.deliver(e));
      } catch (error) {
        this.onError(error as Error);
        for (const w of batch) w.resolve(undefined);
      }
      // Let the stream write what this batch delivered before the next one.
      if (this.waiting.length > 0) await new Promise<void>((run) => setImmediate(run));
    }
  }

  /**
   * A turn's running record and its first events, in one transaction on SQLite (after every
   * earlier append of this process to this log). Resolves undefined when that failed, reported.
   */
  startTurn(record: ConversationRow, events: TurnEvent[], fence: Fence | undefined): Promise<StoredEvent[] | undefined> {
    return this.storeTurn((state) => state.startTurn(record, this.key, events, fence, this.mirror?.to));
  }

  /**
   * A turn's last events, its final record, its messages (when the database keeps them) and the
   * lease given back, in one transaction (after every earlier append of this process to this
   * log). Resolves undefined when that failed, reported.
   */
  finishTurn(
    record: ConversationRow | undefined,
    events: TurnEvent[],
    fence: Fence,
    messages?: StoredMessage[],
  ): Promise<StoredEvent[] | undefined> {
    return this.storeTurn((state) => state.finishTurn(record, this.key, events, fence, messages, this.mirror?.to));
  }

  private storeTurn(write: (state: ServerState) => Promise<StoredEvent[]>): Promise<StoredEvent[] | undefined> {
    return this.enqueue(async () => {
      return (await write(await this.state())).map((e) => this.deliver(e));
    });
  }

  /** Runs after every write asked for before it; a failure is reported, and resolves undefined. */
  private enqueue<T>(work: () => Promise<T>): Promise<T | undefined> {
    const done = this.queue.then(work);
    this.queue = done.catch(() => undefined);
    return done.catch((error: Error) => {
      this.onError(error);
      return undefined;
    });
  }

  /** A stored event, to this process's followers (its copy, to the mirror's); returned without the copy. */
  private deliver({ copy, ...e }: StoredEvent): StoredEvent {
    this.last = Math.max(this.last, e.id);
    for (const f of [...this.followers]) this.offer(f, e);
    if (copy) this.mirror?.log.delivered(copy);
    return e;
  }

  /** An event another log stored here in its own transaction (a Mirror's copy). */
  delivered(e: StoredEvent): void {
    this.deliver(e);
  }

  /** Events after `afterId`, every one (read page by page), or at most `limit`. */
  async since(afterId: number, limit = Infinity): Promise<StoredEvent[]> {
    const state = await this.state();
    const out: StoredEvent[] = [];
    let cursor = afterId;
    while (out.length < limit) {
      const want = Math.min(PAGE, limit - out.length);
      const page = await state.eventsAfter(this.key, cursor, want);
      out.push(...page);
      if (page.length < want) break;
      cursor = page[page.length - 1]!.id;
    }
    if (out.length > 0) this.last = Math.max(this.last, out[out.length - 1]!.id);
    return out;
  }

  /**
   * Replays what came after `afterId` (to `onReplay`, in one batch) and then calls `listener` with
   * each next event, in id order; returns the unsubscribe. `localOnly`: no replay, only the
   * events this process appends from now on.
   */
  follow(
    afterId: number,
    listener: Listener,
    options: { onReplay?: (events: StoredEvent[]) => void; localOnly?: boolean; remote?: boolean } = {},
  ): () => void {
    const f: Follower = {
      cursor: afterId,
      pending: new Map(),
      listener,
      localOnly: options.localOnly === true,
      closed: false,
      remote: options.remote === true,
    };
    this.followers.add(f);
    // What another server appends (a turn running there) is read from the state every so often,
    // by one poller for all of this log's followers.
    if (f.remote) this.addRemote();
    if (!f.localOnly) {
      this.since(afterId).then(
        (past) => {
          if (f.closed) return;
          const fresh = past.filter((e) => e.id > f.cursor);
          if (fresh.length > 0) f.cursor = fresh[fresh.length - 1]!.id;
          for (const id of [...f.pending.keys()]) if (id <= f.cursor) f.pending.delete(id);
          if (options.onReplay) options.onReplay(fresh);
          else for (const e of fresh) listener(e);
          this.drain(f);
        },
        (error: Error) => this.onError(error),
      );
    }
    return () => {
      if (f.closed) return;
      f.closed = true;
      this.followers.delete(f);
      if (f.remote && --this.remoteFollowers === 0) {
        clearInterval(this.remoteTimer);
        this.remoteTimer = undefined;
      }
      if (this.followers.size === 0) {
        clearTimeout(this.gapTimer);
        this.gapTimer = undefined;
      }
    };
  }

  /**
   * This process no longer writes the log's running turn (its lease went to another server, or
   * its end could not be stored): its followers from now on read what other servers append (the
   * `interrupted` event the new holder writes), as followers of a remote turn do.
   */
  followOthers(): void {
    for (const f of this.followers) {
      if (f.localOnly || f.remote || f.closed) continue;
      f.remote = true;
      this.addRemote();
    }
  }

  private addRemote(): void {
    if (this.remoteFollowers++ > 0) return;
    this.remoteTimer = setInterval(() => this.poll(), REMOTE_POLL_MS);
    this.remoteTimer.unref();
  }

  /** Resolves once every append asked for so far is stored (or reported failed). */
  settled(): Promise<unknown> {
    return this.queue;
  }

  private offer(f: Follower, e: StoredEvent): void {
    if (f.closed) return;
    if (f.localOnly) {
      f.listener(e);
      return;
    }
    if (e.id <= f.cursor) return;
    f.pending.set(e.id, e);
    this.drain(f);
  }

  /** Delivers pending events while they follow on; a gap (another process's append) is read from the state. */
  private drain(f: Follower): void {
    while (!f.closed && f.pending.has(f.cursor + 1)) {
      const e = f.pending.get(f.cursor + 1)!;
      f.pending.delete(e.id);
      f.cursor = e.id;
      f.listener(e);
    }
    if (f.closed || f.pending.size === 0 || this.gapTimer) return;
    this.gapTimer = setTimeout(() => {
      this.gapTimer = undefined;
      this.poll();
    }, GAP_POLL_MS);
  }

  /** One read of the state, from the furthest-behind follower's cursor, offered to every follower. */
  private poll(): void {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    const waiting = [...this.followers].filter((f) => !f.localOnly && !f.closed);
    if (waiting.length === 0) return;
    const from = Math.min(...waiting.map((f) => f.cursor));
    this.polling = true;
    let full = false;
    this.state()
      .then((state) => state.eventsAfter(this.key, from, PAGE))
      .then(
        (events) => {
          full = events.length === PAGE;
          if (events.length > 0) this.last = Math.max(this.last, events[events.length - 1]!.id);
          // Not to local-only followers: they take only what this process appends.
          for (const f of [...this.followers]) {
            if (!f.localOnly) for (const e of events) this.offer(f, e);
          }
        },
        (error: Error) => {
          this.onError(error);
          for (const f of [...this.followers]) if (!f.localOnly) this.drain(f);
        },
      )
      .finally(() => {
        this.polling = false;
        const again = this.pollAgain || full;
        this.pollAgain = false;
        if (again) this.poll();
      });
  }
}

/**
 * One EventLog per log in this process, so appends and followers meet. Held weakly: a log nobody
 * uses (no stream follows it, no append or turn waits in it, no timer reads for it) is collected,
 * and the next use makes a new one that reads its ids from the state. Kept strongly, every
 * conversation and task this process ever served stayed in memory (about 1.7 KB each: 1,000
 * conversations more, 1.7 MB more heap after a full collection).
 */
export class EventLogs {
  private readonly logs = new Map<string, WeakRef<EventLog>>();
  /** Drops a collected log's entry, unless a newer log of that key took its place. */
  private readonly collected = new FinalizationRegistry<string>((key) => {
    if (this.logs.get(key)?.deref() === undefined) this.logs.delete(key);
  });

  constructor(
    private readonly state: () => Promise<ServerState>,
    private readonly onError: (error: Error) => void,
  ) {}

  get(key: string): EventLog {
    let log = this.logs.get(key)?.deref();
    if (!log) {
      log = new EventLog(key, this.state, this.onError, this.mirrorOf(key));
      this.logs.set(key, new WeakRef(log));
      this.collected.register(log, key);
      this.opened(key, log);
    }
    return log;
  }

  /** How many logs this process holds (collected ones not yet counted out included). */
  get size(): number {
    return this.logs.size;
  }

  /** Where a log's events are copied as they are stored (none here). */
  protected mirrorOf(_key: string): Mirror | undefined {
    return undefined;
  }

  /** Called once per log as it is first used here (for observers). */
  protected opened(_key: string, _log: EventLog): void {}

  forget(key: string): void {
    this.logs.delete(key);
  }

  /** Every log's appends so far stored (before the state closes); a collected log had none waiting. */
  async settled(): Promise<void> {
    await Promise.all([...this.logs.values()].map((ref) => ref.deref()?.settled()));
  }
}

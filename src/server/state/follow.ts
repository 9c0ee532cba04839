// Following a log that other processes append to (replicas on one database): poll for the events
// after the last one delivered, with its id as the cursor. No event is skipped: an id is taken from
// the log's counter row, whose lock is held until the append commits, so ids become visible in
// order; an event with a lower id can never appear after a higher one was read.
import type { EventRow, EventsStore } from './types.js';

export interface FollowOptions {
  /** Pause between polls when nothing new came (ms). */
  intervalMs?: number;
  /** A failed poll (database down) is reported and retried; the cursor stays where it was. */
  onError?: (error: Error) => void;
}

export interface Follower {
  /** Polls at once (after a local append, so a follower in this process need not wait). */
  wake(): void;
  stop(): void;
  /** The id of the last event delivered. */
  readonly cursor: number;
}

const PAGE = 1_000;

export function followLog(
  store: Pick<EventsStore, 'eventsAfter'>,
  log: string,
  afterId: number,
  onEvent: (e: EventRow) => void,
  options: FollowOptions = {},
): Follower {
  const interval = options.intervalMs ?? 200;
  let cursor = afterId;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let polling = false;
  let again = false;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void poll(), ms);
  };

  const poll = async (): Promise<void> => {
    if (stopped) return;
    if (polling) {
      again = true;
      return;
    }
    polling = true;
    let full = false;
    try {
      const events = await store.eventsAfter(log, cursor, PAGE);
      for (const e of events) {
        if (stopped) break;
        // Never twice, never backwards, whatever the page holds.
        if (e.id <= cursor) continue;
        cursor = e.id;
        onEvent(e);
      }
      full = events.length === PAGE;
    } catch (error) {
      options.onError?.(error as Error);
    } finally {
      polling = false;
    }
    const soon = full || again;
    again = false;
    schedule(soon ? 0 : interval);
  };

  schedule(0);
  return {
    wake: () => schedule(0),
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    get cursor() {
      return cursor;
    },
  };
}

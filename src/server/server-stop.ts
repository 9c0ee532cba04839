// Graceful stop of `atlas serve`: refuse new work, let turns and tasks finish within the grace
// period, then checkpoint and interrupt the rest, flush the streams and the last events, and close the state.
import type { Server } from 'node:http';
import type { IntervalHistogram } from 'node:perf_hooks';
import type { LocalTaskWatcher } from './board/local-watch.js';
import type { LeaseSweep } from './cluster/lease-sweep.js';
import type { LazyState } from './cluster/server-state.js';
import type { Conversations } from './conversations/conversations.js';
import type { LogFn, ServerContext } from './http/context.js';
import type { Phase } from './http/health.js';
import type { AccountEvents } from './state/account-events.js';
import type { Tasks } from './tasks/tasks.js';

export interface StopDeps {
  ctx: ServerContext;
  log: LogFn;
  setPhase: (phase: Phase) => void;
  gracePeriod: number;
  server: Server;
  conversations: Conversations;
  tasks: Pick<Tasks, 'runningCount' | 'settled' | 'stopAll'>;
  localWatch: LocalTaskWatcher | undefined;
  leaseSweep: LeaseSweep;
  loopDelay: IntervalHistogram;
  releaseSandbox: (() => Promise<void>) | undefined;
  /** Stops the agents' spawner (once no turn runs). */
  closeSpawner: () => Promise<unknown>;
  accountEvents: AccountEvents;
  state: LazyState;
}

/** The server's stop: called again, it gives the same promise. */
export function serverStop(deps: StopDeps): (reason: string) => Promise<void> {
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      deps.ctx.stopping = reason;
      deps.setPhase('stopping');
      deps.localWatch?.stop();
      const swept = deps.leaseSweep.stop();
      deps.log({
        msg: 'stopping',
        reason,
        grace_ms: deps.gracePeriod,
        conversations: deps.conversations.runningCount,
        tasks: deps.tasks.runningCount,
      });
      deps.server.close();
      deps.server.closeIdleConnections();
      const settled = Promise.all([deps.conversations.settled(), deps.tasks.settled()]);
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace'>((r) => (timer = setTimeout(() => r('grace'), deps.gracePeriod)));
      const first = await Promise.race([settled.then(() => 'done' as const), graceOver]);
      if (timer) clearTimeout(timer);
      if (first === 'grace') {
        deps.log({
          msg: 'grace period over: checkpointing and interrupting the rest',
          conversations: deps.conversations.runningCount,
          tasks: deps.tasks.runningCount,
        });
        deps.conversations.stopAll(`server stopping (${reason})`);
        await deps.tasks.stopAll();
        await Promise.race([settled, new Promise((r) => setTimeout(r, 15_000).unref())]);
      }
      // Turn streams end themselves once their last event is written: wait for them (bounded, since
      // a busy machine may take a while to flush), then close what is left, such as event watchers.
      const flushBy = Date.now() + 2_000;
      do await new Promise((r) => setTimeout(r, 25));
      while (deps.ctx.streams.total() > 0 && Date.now() < flushBy);
      deps.server.closeAllConnections();
      deps.loopDelay.disable();
      await deps.releaseSandbox?.();
      await deps.closeSpawner();
      deps.conversations.closeJournal();
      // The last events (usage, the account's copies) are stored before the state closes.
      await Promise.race([
        Promise.all([deps.ctx.logs.settled(), deps.accountEvents.settled()]),
        new Promise((r) => setTimeout(r, 5_000).unref()),
      ]);
      // A sweep pass under way ends before the state closes (bounded: the database may not answer).
      await Promise.race([swept, new Promise((r) => setTimeout(r, 5_000).unref())]);
      await deps.state.close();
      deps.log({ msg: 'stopped', reason });
    })();
    return stopping;
  };
  return stop;
}

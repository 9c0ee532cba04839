// Interval checkpoints while a step runs (trigger "interval", every hooks.checkpoint_interval;
// 0 disables). Ticks never overlap, and stop() waits for one in flight so none lands after it.
import { createCheckpoint } from './checkpoint.js';
import type { HookManager } from './manager.js';

export interface IntervalCheckpointer {
  stop(): Promise<void>;
}

export function startIntervalCheckpoints(
  manager: HookManager,
  intervalMs: number,
  describe: () => string,
  onError: (error: unknown) => void = () => {},
): IntervalCheckpointer {
  if (intervalMs <= 0) return { stop: async () => {} };
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (inFlight || stopped) return;
    inFlight = createCheckpoint(manager, { description: describe(), trigger: 'interval' })
      .then(() => undefined, onError)
      .finally(() => {
        inFlight = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}

// The long-running commands (`atlas serve`, `atlas ui`): started, then run until SIGTERM or Ctrl+C,
// then stopped gracefully. The handlers are installed before anything starts: a signal that comes
// while the server starts stops it once it has started (its process spawner, its state) instead
// of ending the process outright and leaving them behind. They stay until it has stopped: without
// one, a library's exit hook (signal-exit, under the lock library) re-raises the signal and kills
// the stop half-way. A second Ctrl+C ends at once (the next start stops what this one left
// running); a repeated SIGTERM waits.

export interface Stoppable {
  stop(reason: string): Promise<void>;
}

/** Runs `start`, then `started` with what it gave, and resolves once a signal has stopped it. */
export async function runUntilStopped<T>(start: () => Promise<T>, stoppable: (running: T) => Stoppable, started?: (running: T) => void) {
  let running: Stoppable | undefined;
  let requested: NodeJS.Signals | undefined;
  let stopped = () => {};
  const done = new Promise<void>((resolve) => (stopped = resolve));
  const stop = (target: Stoppable, signal: NodeJS.Signals) => void target.stop(signal).then(stopped);
  const onSignal = (signal: NodeJS.Signals) => {
    if (requested !== undefined) {
      if (signal === 'SIGINT') process.exit(130);
      return;
    }
    requested = signal;
    if (running) stop(running, signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const value = await start();
    running = stoppable(value);
    if (requested !== undefined) stop(running, requested);
    else started?.(value);
    await done;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

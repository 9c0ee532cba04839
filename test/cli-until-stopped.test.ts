// `runUntilStopped` (src/cli/until-stopped.ts), in process: signals delivered as Node delivers them
// to listeners (process.emit), so that no real signal can reach the test runner. The real signals
// against a real `atlas serve` are in server-stop-early.test.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runUntilStopped } from '../src/cli/until-stopped.js';

const signal = (name: NodeJS.Signals) => process.emit(name as 'SIGTERM', name);

function server() {
  const stops: string[] = [];
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  return {
    stops,
    finish,
    target: {
      stop: (reason: string) => {
        stops.push(reason);
        return finished;
      },
    },
  };
}

afterEach(() => vi.restoreAllMocks());

/**
 * The handlers `runUntilStopped` installs, by identity (not by count: other files of this process
 * add and remove their own handlers meanwhile), and whether they are still installed.
 */
function watchHandlers() {
  const mine: ((...args: unknown[]) => void)[] = [];
  const on = process.on.bind(process);
  vi.spyOn(process, 'on').mockImplementation(((event: string, handler: (...args: unknown[]) => void) => {
    if ((event === 'SIGTERM' || event === 'SIGINT') && handler.name === 'onSignal') mine.push(handler);
    return on(event as 'SIGTERM', handler);
  }) as typeof process.on);
  return {
    installed: () => mine.filter((h) => process.listeners('SIGTERM').includes(h) || process.listeners('SIGINT').includes(h)).length,
    count: () => mine.length,
  };
}

describe('runUntilStopped', () => {
  it('runs until a signal, stops once, and lets go of its handlers once stopped', async () => {
    const s = server();
    const started = vi.fn();
    const handlers = watchHandlers();
    const run = runUntilStopped(
      async () => 'up',
      () => s.target,
      started,
    );
    await vi.waitFor(() => expect(started).toHaveBeenCalledWith('up'));
    expect([handlers.count(), handlers.installed()]).toEqual([2, 2]);
    signal('SIGTERM');
    signal('SIGTERM'); // a repeated SIGTERM waits for the stop under way
    expect(s.stops).toEqual(['SIGTERM']);
    s.finish();
    await run;
    expect(handlers.installed()).toBe(0);
  });

  it('a signal while it starts stops it once it has started, and the start is not announced', async () => {
    const s = server();
    const started = vi.fn();
    let up = (_: string) => {};
    const run = runUntilStopped(
      () => new Promise<string>((resolve) => (up = resolve)),
      () => s.target,
      started,
    );
    signal('SIGINT');
    expect(s.stops).toEqual([]);
    up('up');
    await vi.waitFor(() => expect(s.stops).toEqual(['SIGINT']));
    expect(started).not.toHaveBeenCalled();
    s.finish();
    await run;
  });

  it('a second Ctrl+C ends the process at once', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    const s = server();
    const run = runUntilStopped(
      async () => 'up',
      () => s.target,
    );
    signal('SIGINT');
    signal('SIGINT');
    expect(exit).toHaveBeenCalledWith(130);
    s.finish();
    await run;
  });

  it('a start that fails rejects with its error and removes its handlers', async () => {
    const handlers = watchHandlers();
    await expect(
      runUntilStopped(
        () => Promise.reject(new Error('cannot listen')),
        () => server().target,
      ),
    ).rejects.toThrow('cannot listen');
    expect([handlers.count(), handlers.installed()]).toEqual([2, 0]);
  });
});

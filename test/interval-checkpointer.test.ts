// Interval checkpoints while a step runs: they appear at the configured pace, none lands after
// stop(), stop() waits for one in flight, and an interval of 0 disables them.
import { afterAll, describe, expect, it } from 'vitest';
import { startIntervalCheckpoints } from '../src/hook/interval-checkpointer.js';
import { withLock } from '../src/store/lock.js';
import { makeRepo, makeTask, readHook, removeTempDirs, tempDir, waitFor } from './helpers/autockpt-fixtures.js';

afterAll(removeTempDirs);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function intervalCount(ref: Parameters<typeof readHook>[0]): number {
  return readHook(ref).checkpoints.filter((c) => c.trigger === 'interval').length;
}

describe('interval checkpoints', () => {
  it('records interval checkpoints of the running step while it runs, and none after stop()', async () => {
    const home = tempDir();
    const t = await makeTask({ home, repo: makeRepo() });
    const errors: unknown[] = [];
    const ticker = startIntervalCheckpoints(
      t.manager,
      60,
      () => 'still implementing',
      (e) => errors.push(e),
    );
    await waitFor(() => (intervalCount(t.ref) >= 3 ? true : undefined), 20_000, 'three interval checkpoints');
    await ticker.stop();
    const atStop = intervalCount(t.ref);
    await sleep(400);
    expect(intervalCount(t.ref)).toBe(atStop);
    expect(errors).toEqual([]);
    const hook = readHook(t.ref);
    const last = hook.checkpoints[hook.checkpoints.length - 1]!;
    expect(last).toMatchObject({
      trigger: 'interval',
      description: 'still implementing',
      step_name: 'implement',
      step_index: 1,
      git_branch: t.task.branch,
    });
    expect(hook.current_step?.current_checkpoint_id).toBe(last.checkpoint_id);
  });

  it('stop() waits for a checkpoint in flight, which is then on disk', async () => {
    const home = tempDir();
    const t = await makeTask({ home, repo: makeRepo() });
    let ticks = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let stopped: Promise<void> | undefined;
    let stopDone = false;
    // Hold the hook's lock so the first tick's write has to wait; stop while it waits.
    await withLock(t.manager.files.hook, async () => {
      const ticker = startIntervalCheckpoints(t.manager, 30, () => `tick ${++ticks}`);
      await waitFor(() => (ticks >= 1 ? true : undefined), 10_000, 'the first tick');
      stopped = ticker.stop().then(() => {
        stopDone = true;
      });
      await sleep(300);
      expect(stopDone).toBe(false);
      release();
      await released;
    });
    await stopped;
    expect(stopDone).toBe(true);
    expect(ticks).toBe(1);
    const intervals = readHook(t.ref).checkpoints.filter((c) => c.trigger === 'interval');
    expect(intervals.map((c) => c.description)).toEqual(['tick 1']);
    await sleep(200);
    expect(intervalCount(t.ref)).toBe(1);
  });

  it('records nothing with an interval of 0 (disabled)', async () => {
    const home = tempDir();
    const t = await makeTask({ home, repo: makeRepo() });
    const ticker = startIntervalCheckpoints(t.manager, 0, () => 'never');
    await sleep(300);
    await ticker.stop();
    expect(intervalCount(t.ref)).toBe(0);
  });
});

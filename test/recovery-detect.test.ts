// Crash detection against real processes: an owner that beats, then is SIGKILLed; a stale
// heartbeat; a reused pid; a hook with no owner.json.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { transition } from '../src/domain/hook.js';
import { toTimestamp } from '../src/domain/time.js';
import { readOwner } from '../src/liveness/owner.js';
import { findCrashedTasks, findRecoverableTasks, inspectTask, scanTasks } from '../src/recovery/detect.js';
import { crashedTasksWarning } from '../src/recovery/render.js';
import { taskFiles } from '../src/store/paths.js';
import {
  cleanupRecoveryFixtures,
  completeSteps,
  deadPid,
  iso,
  killAndWait,
  makeRepo,
  makeTask,
  ownerRecord,
  runStep,
  setHook,
  spawnOwner,
  tempHome,
  writeOwnerFile,
} from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;

beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

async function runningTask(minutesAgo = 5) {
  const f = await makeTask({ home, repo });
  const at = iso(minutesAgo * 60_000);
  await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, at), f.task, 1, at));
  return f;
}

describe('findCrashedTasks', () => {
  it('a live owner is running; once SIGKILLed the task is crashed with crash type signal', async () => {
    const f = await runningTask();
    const child = await spawnOwner(f.ref);
    const owner = readOwner(taskFiles(f.ref.dir).owner)!;
    expect(owner.pid).toBe(child.pid);
    expect(findCrashedTasks({ home })).toEqual([]);
    expect(inspectTask(f.ref)).toMatchObject({ condition: 'running' });

    await killAndWait(child, 'SIGKILL');
    const crashed = findCrashedTasks({ home });
    expect(crashed).toHaveLength(1);
    expect(crashed[0]).toMatchObject({ crashType: 'signal', liveness: { status: 'gone' }, ownerStillRunning: false });
    expect(crashed[0]!.ref.id).toBe(f.ref.id);
    expect(crashed[0]!.reason).toContain(`process ${child.pid} is no longer running`);
  });

  it('an owner whose heartbeat is older than its own stale threshold → timeout (owner still running)', async () => {
    const f = await runningTask();
    writeOwnerFile(f.ref, ownerRecord({ heartbeat_at: iso(120_000), stale_threshold_ms: 60_000 }));
    const [c] = findCrashedTasks({ home });
    expect(c).toMatchObject({ crashType: 'timeout', liveness: { status: 'stale' }, ownerStillRunning: true });
    expect(c!.reason).toMatch(/no heartbeat for 1\d\ds \(threshold 60s\)/);
    // Same record with a fresh heartbeat: running.
    writeOwnerFile(f.ref, ownerRecord({ heartbeat_at: iso(1000), stale_threshold_ms: 60_000 }));
    expect(findCrashedTasks({ home })).toEqual([]);
  });

  it('a stale heartbeat from another host → timeout; a fresh one from another host is running', async () => {
    const f = await runningTask();
    writeOwnerFile(f.ref, ownerRecord({ host: 'elsewhere.example', pid: 1, heartbeat_at: iso(600_000) }));
    expect(findCrashedTasks({ home })[0]).toMatchObject({ crashType: 'timeout', ownerStillRunning: false });
    writeOwnerFile(f.ref, ownerRecord({ host: 'elsewhere.example', pid: 1, heartbeat_at: iso(1000) }));
    expect(findCrashedTasks({ home })).toEqual([]);
  });

  it('pid reuse: a live pid whose process start identity differs is not the owner → signal', async () => {
    const f = await runningTask();
    // This test process is alive, but it is not the process that started the task.
    writeOwnerFile(f.ref, ownerRecord({ pid: process.pid, process_start: 'linux:forged-boot:12345' }));
    const [c] = findCrashedTasks({ home });
    expect(c).toMatchObject({ crashType: 'signal', liveness: { status: 'gone' } });
    expect(c!.reason).toContain(`pid ${process.pid} now belongs to another process`);
  });

  it('a dead pid → signal', async () => {
    const f = await runningTask();
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    expect(findCrashedTasks({ home })[0]).toMatchObject({ crashType: 'signal' });
  });

  it('no owner.json: crashed (unknown) only past the grace period', async () => {
    const f = await runningTask(5);
    expect(findCrashedTasks({ home })[0]).toMatchObject({ crashType: 'unknown', liveness: { status: 'none' } });
    expect(findCrashedTasks({ home })[0]!.reason).toContain('no owner.json');
    // A hook updated a moment ago with no owner yet is a task that is starting.
    await setHook(f, (h) => ({ ...h, updated_at: toTimestamp(new Date()) }));
    expect(findCrashedTasks({ home })).toEqual([]);
    expect(inspectTask(f.ref)).toMatchObject({ condition: 'running' });
    expect(findCrashedTasks({ home, graceMs: 0, now: Date.now() + 2000 })).toHaveLength(1);
  });

  it('terminal and awaiting_human hooks are never crashed; interrupted ones are recoverable', async () => {
    const done = await makeTask({ home, repo });
    await setHook(done, (h) =>
      transition(completeSteps(h, done.task, done.task.steps.length, iso(600_000)), {
        to: 'completed',
        trigger: 'task_complete',
        at: iso(600_000),
      }),
    );
    writeOwnerFile(done.ref, ownerRecord({ pid: deadPid() }));

    const paused = await runningTask();
    await setHook(paused, (h) =>
      transition(h, { to: 'awaiting_human', trigger: 'interrupted', at: iso(300_000), details: { reason: 'SIGINT' } }),
    );
    const approval = await runningTask();
    await setHook(approval, (h) => transition(h, { to: 'awaiting_human', trigger: 'approval_requested', at: iso(300_000) }));

    expect(findCrashedTasks({ home })).toEqual([]);
    const conditions = Object.fromEntries(scanTasks({ home }).map((t) => [t.ref.id, t.condition]));
    expect(conditions).toEqual({ [done.ref.id]: 'ended', [paused.ref.id]: 'paused', [approval.ref.id]: 'waiting' });
    expect(findRecoverableTasks({ home }).map((t) => t.ref.id)).toEqual([paused.ref.id]);
  });

  it('filters by repository and tells `atlas start` what to print', async () => {
    const mine = await runningTask();
    const otherRepo = makeRepo();
    await (async () => {
      const f = await makeTask({ home, repo: otherRepo, workspace: 'other' });
      await setHook(f, (h) => runStep(completeSteps(h, f.task, 0, iso(600_000)), f.task, 0, iso(600_000)));
    })();
    expect(findCrashedTasks({ home })).toHaveLength(2);
    const here = findCrashedTasks({ home, repoRoot: repo });
    expect(here.map((t) => t.ref.id)).toEqual([mine.ref.id]);
    expect(crashedTasksWarning(here)).toBe(
      `task ${mine.ref.id} in this repository crashed (unknown: ${here[0]!.reason}); recover it with \`atlas recover --task ${mine.ref.id}\``,
    );
    expect(crashedTasksWarning([])).toBeUndefined();
  });

  it('an unreadable hook is reported, not crashed', async () => {
    const f = await runningTask();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(taskFiles(f.ref.dir).hook, '{ not json');
    expect(findCrashedTasks({ home })).toEqual([]);
    expect(inspectTask(f.ref)).toMatchObject({ condition: 'unreadable' });
  });
});

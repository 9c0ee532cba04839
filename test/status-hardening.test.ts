// `atlas status` (issue 8): a stopped owner is "not responding" with the command that applies,
// and ended tasks beyond the ones shown are counted without reading their hook.json.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { transition } from '../src/domain/hook.js';
import { listTasks } from '../src/engine/task-list.js';
import { taskFiles } from '../src/store/paths.js';
import { atlasSync } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import {
  cleanupRecoveryFixtures,
  completeSteps,
  iso,
  killAndWait,
  makeRepo,
  makeTask,
  runStep,
  setHook,
  spawnOwner,
  tempHome,
} from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;

beforeAll(() => ensureBuilt());
beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a task whose owner is stopped (SIGSTOP)', () => {
  it('is "not responding (pid N)" with kill-then-recover, and recover agrees; once killed it is crashed', async () => {
    const f = await makeTask({ home, repo });
    const at = iso(60_000);
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, at), f.task, 1, at));
    const child = await spawnOwner(f.ref, { heartbeatIntervalMs: 250, staleThresholdMs: 1000 });
    try {
      child.kill('SIGSTOP');
      await sleep(1600);
      const env = { ATLAS_HOME: home };
      const status = atlasSync(['status'], { cwd: repo, env });
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`${f.ref.id} not responding (pid ${child.pid}`);
      expect(status.stdout).toContain(`kill ${child.pid}`);
      expect(status.stdout).toContain(`then atlas recover --task ${f.ref.id}`);
      expect(status.stdout).not.toContain('crashed (');
      const json = JSON.parse(atlasSync(['status', '--json'], { cwd: repo, env }).stdout);
      expect(json.tasks[0]).toMatchObject({ activity: 'not_responding', pid: child.pid });

      // recover refuses for the same reason status gives, with the same remedy.
      const recover = atlasSync(['recover', '--task', f.ref.id, '--yes'], { cwd: repo, env });
      expect(recover.code).toBe(1);
      expect(recover.stderr).toContain(`kill ${child.pid}`);
    } finally {
      await killAndWait(child, 'SIGKILL');
    }
    const after = listTasks(home);
    expect(after.tasks[0]).toMatchObject({ activity: 'crashed', crash_type: 'signal' });
  });
});

async function endedTask(workspace: string, minutesAgo: number) {
  const f = await makeTask({ home, repo, workspace, at: new Date(Date.now() - minutesAgo * 60_000) });
  const at = iso(minutesAgo * 60_000);
  await setHook(f, (h) => transition(completeSteps(h, f.task, f.task.steps.length, at), { to: 'completed', trigger: 'task_complete', at }));
  return f;
}

describe('status and ended tasks', () => {
  it('counts ended tasks beyond the five shown from task.json alone: their hook.json is never read', async () => {
    const ended = [];
    for (let i = 0; i < 8; i++) ended.push(await endedTask(`done-${i}`, 100 - i));
    // The three oldest get a hook.json no parser would accept: reading it would list them unreadable.
    for (const f of ended.slice(0, 3)) writeFileSync(taskFiles(f.ref.dir).hook, '{ not json');
    const listing = listTasks(home);
    expect(listing.unreadable).toEqual([]);
    expect(listing.hidden).toBe(3);
    expect(listing.tasks.map((t) => t.id)).toEqual(
      ended
        .slice(3)
        .reverse()
        .map((f) => f.ref.id),
    );
    // --all shows them, so it reads them.
    expect(
      listTasks(home, { all: true })
        .unreadable.map((u) => u.id)
        .sort(),
    ).toEqual(
      ended
        .slice(0, 3)
        .map((f) => f.ref.id)
        .sort(),
    );
  });

  it('remembers all-ended workspaces, and a task added to one later is listed at once', async () => {
    for (let i = 0; i < 7; i++) await endedTask(`done-${i}`, 100 - i);
    listTasks(home);
    const cache = JSON.parse(readFileSync(join(home, 'cache', 'ended-workspaces.json'), 'utf8'));
    expect(Object.keys(cache.workspaces)).toHaveLength(7);
    // Cached workspaces are not read again: an unreadable task.json there goes unnoticed...
    const oldest = join(home, 'workspaces', 'done-0', 'tasks', cache.workspaces['done-0'].ids[0], 'task.json');
    const text = readFileSync(oldest, 'utf8');
    writeFileSync(oldest, '{ broken');
    expect(listTasks(home).unreadable).toEqual([]);
    writeFileSync(oldest, text);
    // ...until the workspace's tasks/ changes: a new running task in the oldest workspace shows.
    const f = await makeTask({ home, repo, workspace: 'done-0', at: new Date(Date.now() - 1000) });
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, iso(1000)), f.task, 1, iso(1000)));
    const listing = listTasks(home);
    expect(listing.tasks[0]!.id).toBe(f.ref.id);
    expect(listing.hidden).toBe(2);
    const next = JSON.parse(readFileSync(join(home, 'cache', 'ended-workspaces.json'), 'utf8'));
    expect(Object.keys(next.workspaces)).not.toContain('done-0');
  });
});

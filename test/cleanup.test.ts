// `atlas cleanup` on back-dated tasks: exactly the expired terminal tasks go (with their clean
// worktrees); running, fresh and unreadable ones stay; a dirty worktree is kept and named; a dry
// run lists the same tasks and figures and changes nothing.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../src/domain/task.js';
import { toTimestamp } from '../src/domain/time.js';
import { readHookFile, writeHookFile } from '../src/store/hook-file.js';
import { withLock } from '../src/store/lock.js';
import { taskFiles } from '../src/store/paths.js';
import type { TaskFixture } from './helpers/autockpt-fixtures.js';
import { ATLAS_BIN, atlas, cleanEnv, git, makeRepo, makeTask, removeTempDirs, requireBuild, tempDir } from './helpers/autockpt-fixtures.js';
import { treeListing } from './helpers/core-fixtures.js';

beforeAll(requireBuild);
afterAll(removeTempDirs);

const DAY = 24 * 3_600_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY);

interface Scene {
  home: string;
  repo: string;
  oldCompleted: TaskFixture;
  freshCompleted: TaskFixture;
  dirtyFailed: TaskFixture;
  oldAbandonedInPlace: TaskFixture;
  oldRunning: TaskFixture;
  freshFailed: TaskFixture;
  unreadable: TaskFixture;
}

async function scene(): Promise<Scene> {
  const home = tempDir();
  const repo = makeRepo();
  const oldCompleted = await makeTask({ home, repo, workspace: 'shared', state: 'completed', at: daysAgo(31) });
  const freshCompleted = await makeTask({ home, repo, workspace: 'shared', state: 'completed', at: daysAgo(10) });
  const dirtyFailed = await makeTask({ home, repo, workspace: 'dirty', state: 'failed', at: daysAgo(8) });
  writeFileSync(join(dirtyFailed.worktree, 'wip.txt'), 'unsaved work\n');
  const oldAbandonedInPlace = await makeTask({
    home,
    repo: makeRepo(),
    workspace: 'inplace',
    state: 'abandoned',
    at: daysAgo(9),
    inPlace: true,
  });
  const oldRunning = await makeTask({ home, repo, workspace: 'running', state: 'step_running', at: daysAgo(60) });
  const freshFailed = await makeTask({ home, repo, workspace: 'fresh-failed', state: 'failed', at: daysAgo(6) });
  const unreadable = await makeTask({ home, repo, workspace: 'broken', state: 'completed', at: daysAgo(90) });
  writeFileSync(taskFiles(unreadable.ref.dir).hook, '{ "version": "1.0", truncated');
  return { home, repo, oldCompleted, freshCompleted, dirtyFailed, oldAbandonedInPlace, oldRunning, freshFailed, unreadable };
}

function cleanup(s: Scene, args: string[] = []) {
  const r = atlas(['cleanup', '--json', ...args], { cwd: s.home, home: s.home });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('atlas cleanup', () => {
  it('dry run lists exactly the expired tasks with the same figures as the real run, and changes nothing', async () => {
    const s = await scene();
    const expired = [s.oldCompleted, s.dirtyFailed, s.oldAbandonedInPlace].map((t) => t.ref.id).sort();
    const before = [...treeListing(s.home), ...treeListing(s.repo)];
    const worktreesBefore = git(s.repo, ['worktree', 'list', '--porcelain']);

    const dry = cleanup(s, ['--dry-run']);
    expect(dry.dry_run).toBe(true);
    expect(dry.removed.map((t: { task_id: string }) => t.task_id).sort()).toEqual(expired);
    expect(dry.by_state).toEqual({ completed: 1, failed: 1, abandoned: 1 });
    expect(dry.kept).toEqual({ active: 1, within_retention: 2 });
    expect(dry.skipped.map((t: { task_id: string }) => t.task_id)).toEqual([s.unreadable.ref.id]);
    expect(dry.skipped[0].reason).toContain('hook.json cannot be read');
    expect(dry.worktrees_removed).toEqual([s.oldCompleted.worktree]);
    expect(dry.worktrees_kept).toEqual([
      { path: s.dirtyFailed.worktree, task_id: s.dirtyFailed.ref.id, reason: 'uncommitted work in 1 file (wip.txt)' },
    ]);
    expect(dry.workspaces_removed.sort()).toEqual(['dirty', 'inplace']);
    expect(dry.bytes_freed).toBeGreaterThan(0);
    expect([...treeListing(s.home), ...treeListing(s.repo)]).toEqual(before);
    expect(git(s.repo, ['worktree', 'list', '--porcelain'])).toBe(worktreesBefore);

    const text = atlas(['cleanup', '--dry-run'], { cwd: s.home, home: s.home });
    expect(text.stdout).toContain('Would remove 3 tasks (1 completed, 1 failed, 1 abandoned), freeing');
    expect(text.stdout).toContain(`worktree would be kept: ${s.dirtyFailed.worktree}: uncommitted work in 1 file (wip.txt)`);
    expect(text.stdout).toContain('Nothing was changed (dry run)');

    const real = cleanup(s);
    expect(real.dry_run).toBe(false);
    expect(real.removed.map((t: { task_id: string }) => t.task_id).sort()).toEqual(expired);
    expect(real.by_state).toEqual(dry.by_state);
    expect(real.bytes_freed).toBe(dry.bytes_freed);
    expect(real.worktrees_removed).toEqual(dry.worktrees_removed);
    expect(real.worktrees_kept).toEqual(dry.worktrees_kept);
    expect(real.workspaces_removed.sort()).toEqual(dry.workspaces_removed.sort());
  });

  it('removes exactly the expired terminal tasks, their clean worktrees and emptied workspaces', async () => {
    const s = await scene();
    const report = cleanup(s);
    for (const t of [s.oldCompleted, s.dirtyFailed, s.oldAbandonedInPlace]) expect(existsSync(t.ref.dir), t.ref.id).toBe(false);
    for (const t of [s.freshCompleted, s.oldRunning, s.freshFailed, s.unreadable]) expect(existsSync(t.ref.dir), t.ref.id).toBe(true);

    // Clean worktree: gone from disk and from git, its branch and commits kept.
    expect(existsSync(s.oldCompleted.worktree)).toBe(false);
    expect(git(s.repo, ['worktree', 'list'])).not.toContain(s.oldCompleted.worktree);
    expect(git(s.repo, ['branch', '--list', s.oldCompleted.task.branch])).toContain(s.oldCompleted.task.branch);
    // Dirty worktree: kept with the work in it, and the report says why.
    expect(readFileSync(join(s.dirtyFailed.worktree, 'wip.txt'), 'utf8')).toBe('unsaved work\n');
    expect(report.worktrees_kept[0].reason).toBe('uncommitted work in 1 file (wip.txt)');
    // The in-place task's repository is untouched.
    expect(existsSync(join(s.oldAbandonedInPlace.worktree, 'README.md'))).toBe(true);
    // Worktrees of tasks that stay are untouched.
    for (const t of [s.freshCompleted, s.oldRunning, s.freshFailed]) expect(existsSync(t.worktree)).toBe(true);

    // Workspaces: emptied ones are gone, the shared one lists only what remains.
    const workspaces = join(s.home, 'workspaces');
    expect(readdirSync(workspaces).sort()).toEqual(['broken', 'fresh-failed', 'running', 'shared']);
    const shared = JSON.parse(readFileSync(join(workspaces, 'shared', 'workspace.json'), 'utf8')) as Workspace;
    expect(shared.tasks).toEqual([s.freshCompleted.ref.id]);
    expect(existsSync(join(s.home, 'trash')) ? readdirSync(join(s.home, 'trash')) : []).toEqual([]);

    // Running it again finds nothing more to do.
    const again = cleanup(s);
    expect(again.removed).toEqual([]);
    expect(again.skipped.map((t: { task_id: string }) => t.task_id)).toEqual([s.unreadable.ref.id]);
    const text = atlas(['cleanup'], { cwd: s.home, home: s.home });
    expect(text.stdout).toContain('Nothing to clean up');
    expect(text.stdout).toContain(`${s.unreadable.ref.id} (broken): hook.json cannot be read`);
  });

  it('takes retention from configuration: flags, ATLAS_HOME config and the repository config', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const failed = await makeTask({ home, repo, state: 'failed', at: new Date(Date.now() - 3 * 3_600_000) });
    const completed = await makeTask({ home, repo, state: 'completed', at: new Date(Date.now() - 3 * 3_600_000) });
    expect(cleanup({ home } as Scene, ['--dry-run']).removed).toEqual([]);

    const flagged = atlas(['cleanup', '--dry-run', '--json', '-c', 'hooks.retention.failed=2h'], { cwd: home, home });
    expect(JSON.parse(flagged.stdout).removed.map((t: { task_id: string }) => t.task_id)).toEqual([failed.ref.id]);

    mkdirSync(join(repo, '.atlas'));
    writeFileSync(join(repo, '.atlas', 'config.yaml'), 'hooks:\n  retention:\n    completed: 1h\n');
    writeFileSync(join(home, 'config.yaml'), 'hooks:\n  retention:\n    failed: 90m\n');
    const configured = cleanup({ home } as Scene, ['--dry-run']);
    expect(configured.removed.map((t: { task_id: string }) => t.task_id).sort()).toEqual([failed.ref.id, completed.ref.id].sort());
    expect(configured.removed.find((t: { task_id: string }) => t.task_id === completed.ref.id).retention_ms).toBe(3_600_000);
  });

  it('never removes a task while its hook is locked, and re-decides under the lock', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo, state: 'completed', at: daysAgo(40) });
    const files = taskFiles(t.ref.dir);
    let output = '';
    let exit: Promise<number> | undefined;
    await withLock(files.hook, async () => {
      const child = spawn(process.execPath, [ATLAS_BIN, 'cleanup', '--json'], { cwd: home, env: cleanEnv({ ATLAS_HOME: home }) });
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      exit = new Promise((resolve) => child.on('close', (code) => resolve(code ?? -1)));
      // Long enough for cleanup to have read the hook and be waiting for the lock, on a busy machine too.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(existsSync(t.ref.dir)).toBe(true);
      // Someone records activity while cleanup waits: the task is fresh again.
      const hook = readHookFile(files.hook);
      writeHookFile(files.hook, { ...hook, updated_at: toTimestamp(new Date()) });
    });
    expect(await exit).toBe(0);
    const report = JSON.parse(output);
    expect(report.removed).toEqual([]);
    expect(report.skipped).toEqual([
      { task_id: t.ref.id, workspace: t.ref.workspace, dir: t.ref.dir, reason: 'updated meanwhile; within its retention again' },
    ]);
    expect(existsSync(t.ref.dir)).toBe(true);
    expect(existsSync(t.worktree)).toBe(true);
  });
});

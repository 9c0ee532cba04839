// `atlas cleanup` sweeps what SIGKILLed atlas processes leave: task folders `atlas start` claimed and
// never finished, and temp files of interrupted atomic writes. Only what is provably dead and old
// goes; a dry run lists exactly that and changes nothing; `atlas status` points at cleanup.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessHalfCreated, isHalfCreated } from '../src/cleanup/half-created.js';
import { parseTempName } from '../src/cleanup/temp-name.js';
import { writeFileAtomic } from '../src/store/atomic-write.js';
import { homePaths, taskFiles, workspaceDir } from '../src/store/paths.js';
import type { TaskRef } from '../src/store/task-store.js';
import type { TaskFixture } from './helpers/autockpt-fixtures.js';
import { atlas, makeRepo, makeTask, removeTempDirs, requireBuild, tempDir } from './helpers/autockpt-fixtures.js';
import { treeListing } from './helpers/core-fixtures.js';
import { backdate, deadPid, halfCreatedTask, interruptedWrite, tempNameFor } from './helpers/debris-fixtures.js';

beforeAll(requireBuild);
afterAll(removeTempDirs);

const HOUR = 3_600_000;
const OLD = 2 * HOUR;

interface Scene {
  home: string;
  live: TaskFixture;
  oldHalf: TaskRef;
  freshHalf: TaskRef;
  userHalf: TaskRef;
  startingHalf: TaskRef;
  /** Temp files that must go. */
  stale: string[];
  /** Files that must stay. */
  kept: string[];
}

async function scene(): Promise<Scene> {
  const home = tempDir('atlas-debris-');
  const repo = makeRepo();
  const live = await makeTask({ home, repo, workspace: 'live', state: 'step_running' });
  const liveFiles = taskFiles(live.ref.dir);

  // Half-created task folders, as `atlas start` leaves them when killed before task.json.
  const oldHalf = halfCreatedTask(home, 'old-half', deadPid());
  await interruptedWrite(taskFiles(oldHalf.dir).owner); // and a write of owner.json killed: its temp file goes with the folder
  backdate(workspaceDir('old-half', home), OLD);
  const freshHalf = halfCreatedTask(home, 'fresh-half', deadPid());
  const userHalf = halfCreatedTask(home, 'user-half', deadPid());
  writeFileSync(join(userHalf.dir, 'notes.txt'), 'my notes\n');
  backdate(workspaceDir('user-half', home), OLD);
  const startingHalf = halfCreatedTask(home, 'starting-half', process.pid);
  backdate(workspaceDir('starting-half', home), OLD);

  // Temp files of interrupted writes, in every place atlas writes atomically.
  mkdirSync(join(liveFiles.artifacts, 'implement'), { recursive: true });
  mkdirSync(homePaths(home).keysDir, { recursive: true });
  mkdirSync(homePaths(home).cacheDir, { recursive: true });
  const stale = [
    await interruptedWrite(liveFiles.hook),
    await interruptedWrite(join(liveFiles.artifacts, 'implement', '1-output.md')),
    await interruptedWrite(join(workspaceDir('live', home), 'workspace.json')),
    await interruptedWrite(homePaths(home).taskIndex),
    await interruptedWrite(join(homePaths(home).cacheDir, 'config-0123abcd.json')),
  ];
  for (const path of stale) backdate(path, OLD);
  const writerAlive = join(live.ref.dir, tempNameFor('task.json', process.pid));
  const fresh = await interruptedWrite(liveFiles.hookMarkdown);
  const notOurs = [
    join(live.ref.dir, '.hook.json.tmp'),
    join(live.ref.dir, `.notes.txt.${deadPid()}.${Date.now().toString(36)}1.tmp`), // not a file atlas writes there
    join(live.ref.dir, `.hook.json.${deadPid()}.tmp`),
  ];
  for (const path of [writerAlive, ...notOurs]) {
    writeFileSync(path, 'x\n');
    backdate(path, OLD);
  }
  // A workspace folder a start created and left without a task, and one just created.
  mkdirSync(join(workspaceDir('empty-old', home), 'tasks'), { recursive: true });
  backdate(workspaceDir('empty-old', home), OLD);
  mkdirSync(join(workspaceDir('empty-new', home), 'tasks'), { recursive: true });

  return {
    home,
    live,
    oldHalf,
    freshHalf,
    userHalf,
    startingHalf,
    stale,
    kept: [writerAlive, fresh, ...notOurs, liveFiles.hook, liveFiles.task, join(userHalf.dir, 'notes.txt')],
  };
}

function cleanup(s: Scene, args: string[] = []) {
  const r = atlas(['cleanup', '--json', ...args], { cwd: s.home, home: s.home });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

function expectations(s: Scene, report: ReturnType<typeof cleanup>) {
  expect(report.removed).toEqual([]);
  expect(report.half_created_removed.map((h: { task_id: string }) => h.task_id)).toEqual([s.oldHalf.id]);
  expect(report.half_created_removed[0]).toMatchObject({ workspace: 'old-half', dir: s.oldHalf.dir });
  expect(report.half_created_removed[0].age_ms).toBeGreaterThan(HOUR);
  expect(report.half_created_removed[0].bytes).toBeGreaterThan(0);
  const kept = Object.fromEntries(report.half_created_kept.map((k: { task_id: string; reason: string }) => [k.task_id, k.reason]));
  expect(Object.keys(kept).sort()).toEqual([s.freshHalf.id, s.userHalf.id, s.startingHalf.id].sort());
  expect(kept[s.freshHalf.id]).toMatch(/^changed 0m ago; `atlas cleanup` removes it once it is 1h old \(in (1h|59m)\)$/);
  expect(kept[s.userHalf.id]).toBe('it holds files atlas did not put there (notes.txt); look at them, then remove the folder yourself');
  expect(kept[s.startingHalf.id]).toBe(`atlas start (pid ${process.pid}) is still setting it up`);
  expect(report.temp_files_removed.map((t: { path: string }) => t.path).sort()).toEqual([...s.stale].sort());
  for (const t of report.temp_files_removed) expect(t.pid).toBe(parseTempName(basename(t.path))!.pid);
  expect(report.workspaces_removed.sort()).toEqual(['empty-old', 'old-half']);
  expect(report.skipped).toEqual([]);
  expect(report.kept).toEqual({ active: 1, within_retention: 0 });
  const debrisBytes = [...report.half_created_removed, ...report.temp_files_removed].reduce(
    (n: number, x: { bytes: number }) => n + x.bytes,
    0,
  );
  expect(report.bytes_freed).toBe(debrisBytes);
}

describe('atlas cleanup: debris of killed processes', () => {
  it('a dry run lists exactly what would go, with the figures of the real run, and changes nothing', async () => {
    const s = await scene();
    const before = treeListing(s.home);
    const dry = cleanup(s, ['--dry-run']);
    expect(dry.dry_run).toBe(true);
    expectations(s, dry);
    expect(treeListing(s.home)).toEqual(before);

    const text = atlas(['cleanup', '--dry-run'], { cwd: s.home, home: s.home });
    expect(text.stdout).toContain('No ended task is older than its retention');
    expect(text.stdout).toContain('Would remove 1 task folder `atlas start` left unfinished (no task.json; nothing ran), freeing');
    expect(text.stdout).toContain(`${s.oldHalf.id}  unchanged for 2h`);
    expect(text.stdout).toContain('Would remove 5 temp files of interrupted writes, freeing');
    for (const path of s.stale) expect(text.stdout).toContain(`  ${path}  (process `);
    expect(text.stdout).toContain('Kept 3 task folders that `atlas start` left unfinished:');
    expect(text.stdout).toContain(`  ${s.userHalf.dir}: it holds files atlas did not put there (notes.txt)`);
    expect(text.stdout).toContain('Workspaces that would be removed (no task left): empty-old, old-half');
    expect(text.stdout).toContain('Nothing was changed (dry run)');
    expect(treeListing(s.home)).toEqual(before);

    const real = cleanup(s);
    expect(real.dry_run).toBe(false);
    expectations(s, real);
    expect(real.bytes_freed).toBe(dry.bytes_freed);
  });

  it('removes old half-created folders and stale temp files, and keeps everything else', async () => {
    const s = await scene();
    const status = atlas(['status'], { cwd: s.home, home: s.home });
    expect(status.stdout).toContain(
      `? ${s.oldHalf.id}: atlas start stopped before it wrote this task (no task.json, no hook.json; nothing ran): \`atlas cleanup\` removes its folder ${s.oldHalf.dir}`,
    );
    expect(status.stdout).toContain(
      `? ${s.freshHalf.id}: atlas start stopped before it wrote this task (no task.json, no hook.json; nothing ran): its folder changed 0m ago; \`atlas cleanup\` removes it once it is 1h old`,
    );
    expect(status.stdout).toContain(
      `? ${s.userHalf.id}: atlas start stopped before it wrote this task (no task.json, no hook.json; nothing ran), but its folder ${s.userHalf.dir} is not left to \`atlas cleanup\`: it holds files atlas did not put there (notes.txt)`,
    );
    expect(status.stdout).toContain(`? ${s.startingHalf.id}: no task.json yet: atlas start (pid ${process.pid}) is still setting it up`);

    cleanup(s);
    expect(existsSync(s.oldHalf.dir)).toBe(false);
    expect(existsSync(workspaceDir('old-half', s.home))).toBe(false);
    for (const ref of [s.freshHalf, s.userHalf, s.startingHalf]) expect(existsSync(taskFiles(ref.dir).owner), ref.id).toBe(true);
    for (const path of s.stale) expect(existsSync(path), path).toBe(false);
    for (const path of s.kept) expect(existsSync(path), path).toBe(true);
    expect(existsSync(workspaceDir('empty-old', s.home))).toBe(false);
    expect(existsSync(workspaceDir('empty-new', s.home))).toBe(true);
    // The live task is untouched: still readable and listed as it was.
    const after = atlas(['status', '--json'], { cwd: s.home, home: s.home });
    const listing = JSON.parse(after.stdout);
    expect(listing.tasks.map((t: { id: string }) => t.id)).toEqual([s.live.ref.id]);
    expect(listing.unreadable.map((u: { id: string }) => u.id).sort()).toEqual([s.freshHalf.id, s.userHalf.id, s.startingHalf.id].sort());

    // Nothing more goes until time passes.
    const again = cleanup(s);
    expect(again.half_created_removed).toEqual([]);
    expect(again.temp_files_removed).toEqual([]);
    expect(again.workspaces_removed).toEqual([]);
    const text = atlas(['cleanup'], { cwd: s.home, home: s.home });
    expect(text.stdout).toContain('Nothing to clean up');

    // Once the fresh one is old, it goes too; the one with the user's file never does.
    backdate(workspaceDir('fresh-half', s.home), OLD);
    const later = cleanup(s);
    expect(later.half_created_removed.map((h: { task_id: string }) => h.task_id)).toEqual([s.freshHalf.id]);
    expect(existsSync(s.userHalf.dir)).toBe(true);
  });
});

describe('debris next to expired tasks', () => {
  it('temp files in an expired task go with it (counted once); a stale one in its workspace does not keep the workspace', async () => {
    const home = tempDir('atlas-debris-');
    const repo = makeRepo();
    const old = await makeTask({ home, repo, workspace: 'old', state: 'completed', at: new Date(Date.now() - 40 * 24 * HOUR) });
    const inTask = await interruptedWrite(taskFiles(old.ref.dir).hook);
    const inWorkspace = await interruptedWrite(join(workspaceDir('old', home), 'workspace.json'));
    for (const path of [inTask, inWorkspace]) backdate(path, OLD);
    const run = (args: string[]) => JSON.parse(atlas(['cleanup', '--json', ...args], { cwd: home, home }).stdout);

    const dry = run(['--dry-run']);
    expect(dry.removed.map((t: { task_id: string }) => t.task_id)).toEqual([old.ref.id]);
    expect(dry.temp_files_removed.map((t: { path: string }) => t.path)).toEqual([inWorkspace]);
    expect(dry.workspaces_removed).toEqual(['old']);
    const text = atlas(['cleanup', '--dry-run'], { cwd: home, home }).stdout;
    expect(text).toContain('Would remove 1 task (1 completed), freeing');
    expect(text).toContain('Would remove 1 temp file of interrupted writes, freeing');
    expect(text).toMatch(/In all, would free \d/);

    const real = run([]);
    expect(real.temp_files_removed.map((t: { path: string }) => t.path)).toEqual([inWorkspace]);
    expect(real.workspaces_removed).toEqual(['old']);
    expect(real.bytes_freed).toBe(dry.bytes_freed);
    expect(existsSync(workspaceDir('old', home))).toBe(false);
  });
});

describe('half-created folders, judged directly', () => {
  it('keeps a folder while a write in it is in progress, or when artifacts/ holds anything', () => {
    const home = tempDir('atlas-debris-');
    const writing = halfCreatedTask(home, 'writing', deadPid());
    writeFileSync(join(writing.dir, tempNameFor('task.json', process.pid)), '{');
    backdate(writing.dir, OLD);
    expect(assessHalfCreated(writing.dir, Date.now())).toMatchObject({
      action: 'keep',
      why: 'owned',
      reason: `process ${process.pid} is writing in it`,
    });

    const filled = halfCreatedTask(home, 'filled', deadPid());
    writeFileSync(join(taskFiles(filled.dir).artifacts, 'plan.md'), '# plan\n');
    backdate(filled.dir, OLD);
    expect(assessHalfCreated(filled.dir, Date.now())).toMatchObject({ action: 'keep', why: 'foreign', foreign: ['artifacts/plan.md'] });

    const bare = halfCreatedTask(home, 'bare', deadPid());
    backdate(bare.dir, OLD);
    expect(assessHalfCreated(bare.dir, Date.now())).toMatchObject({ action: 'remove' });
    // Once task.json appears it is a task (recover's business), never debris.
    writeFileSync(taskFiles(bare.dir).task, '{}');
    expect(isHalfCreated(bare.dir)).toBe(false);
  });
});

describe('atlas temp names', () => {
  it('parses the names writeFileAtomic gives its temp files, and nothing else', () => {
    const dir = tempDir('atlas-temp-name-');
    let seen = '';
    writeFileAtomic(join(dir, 'hook.json'), '{}', { beforeRename: (temp) => (seen = basename(temp)) });
    expect(parseTempName(seen)).toEqual({ target: 'hook.json', pid: process.pid });
    expect(parseTempName(`.HOOK.md.4242.${Date.now().toString(36)}123456.tmp`)).toEqual({ target: 'HOOK.md', pid: 4242 });
    for (const name of [
      '.hook.json.tmp',
      'hook.json.4242.lx2abcde1.tmp',
      '.hook.json.4242.tmp',
      '.hook.json.0.lx2abcde1.tmp',
      '.hook.json.4242.LX2ABCDE1.tmp',
      '.hook.json.4242.lx2abcde1.tmp.bak',
      '..4242.lx2abcde1.tmp',
    ]) {
      expect(parseTempName(name), name).toBeUndefined();
    }
  });
});

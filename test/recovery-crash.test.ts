// Crash injection with real processes: `atlas start` on slow templates, SIGKILL at chosen moments
// (during a command step, during validation, between steps), then `atlas recover` finishes the
// task. After every kill hook.json parses, history lost nothing and no file of the working tree
// (committed or not) is gone, unless saved where recovery said.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { git } from './helpers/core-fixtures.js';
import { CHECK_LIKE, HANG, QUICK, SLOW, STAGED } from './helpers/crash-templates.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { CrashRepo } from './helpers/recovery-crash-fixtures.js';
import {
  crashRepo,
  expectHistoryKept,
  expectIntactAfterKill,
  expectNoFileLost,
  isAlive,
  killBetweenSteps,
  readHook,
  readTaskJson,
  recover,
  run,
  runningCommand,
  sigkill,
  startTask,
  treeFiles,
  validating,
  waitForHook,
} from './helpers/recovery-crash-fixtures.js';

let r: CrashRepo;

beforeAll(() => ensureBuilt(), 120_000);
afterEach(() => r?.cleanup());

describe('SIGKILL during a command step', () => {
  it('an idempotent step is retried by `atlas recover --yes`; status shows the crash and start warns about it', async () => {
    r = crashRepo({ slow: SLOW, quick: QUICK });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, runningCommand('prepare'), 'prepare running');
    await sigkill(started.child, dir);
    const afterKill = expectIntactAfterKill(dir, seen);
    const task = readTaskJson(dir);
    const files = treeFiles(task.worktree);

    const status = await run(r, ['status', '--json']);
    const listed = JSON.parse(status.stdout).tasks.find((t: { id: string }) => t.id === task.id);
    expect(listed).toMatchObject({ activity: 'crashed', crash_type: 'signal', state: 'step_running', step_name: 'prepare' });
    expect(listed.note).toMatch(/no longer running/);
    const text = await run(r, ['status']);
    expect(text.stdout).toContain(`! ${task.id} crashed (signal:`);
    expect(text.stdout).toContain(`atlas recover --task ${task.id}`);

    const other = await run(r, ['start', 'quick', 'another task', '--no-interactive']);
    expect(other.code).toBe(0);
    expect(other.stderr).toContain(`task ${task.id} in this repository crashed`);
    expect(other.stderr).toContain(`atlas recover --task ${task.id}`);

    const rec = await recover(r, ['--task', task.id, '--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result).toMatchObject({ action: 'retry_step', action_source: 'recommended', state: 'completed', exit_code: 0 });
    expect(rec.result.diagnosis).toMatchObject({
      kind: 'crash',
      crash_type: 'signal',
      state_before: 'step_running',
      step: { name: 'prepare', attempt: 1 },
    });
    const final = readHook(dir);
    expect(final.state).toBe('completed');
    expectHistoryKept(afterKill.history, final.history);
    expect(
      final.history.filter((e) => e.trigger === 'step_start' && e.details?.['step_index'] === 0).map((e) => e.details?.['attempt']),
    ).toEqual([1, 2]);
    expectNoFileLost(task.worktree, files);
    expect(readFileSync(join(task.worktree, 'prepare.txt'), 'utf8')).toBe('prepared\n');
    expect(git(task.worktree, 'status', '--porcelain')).toBe('');
    expect(existsSync(join(dir, 'owner.json'))).toBe(false);
  });

  it('a non-idempotent step needs a person: --yes leaves it waiting (exit 5), --action retry_step finishes it', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, runningCommand('build'), 'build running');
    await sigkill(started.child, dir);
    const afterKill = expectIntactAfterKill(dir, seen);
    const task = readTaskJson(dir);
    const files = treeFiles(task.worktree);

    const first = await recover(r, ['--yes']);
    expect(first.code, first.stderr).toBe(5);
    expect(first.result).toMatchObject({ action: 'manual', state: 'awaiting_human', outcome: null });
    expect(first.result.diagnosis.recovery.recommended_action).toBe('manual');
    expect(first.result.message).toContain(`atlas recover --task ${task.id} --action`);
    const waiting = expectIntactAfterKill(dir, afterKill);
    expect(waiting.state).toBe('awaiting_human');
    const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
    expect(listed).toMatchObject({ activity: 'paused' });

    const second = await recover(r, ['--task', task.id, '--action', 'retry_step']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.result).toMatchObject({ action: 'retry_step', action_source: 'flag', state: 'completed' });
    const final = readHook(dir);
    expectHistoryKept(waiting.history, final.history);
    expectNoFileLost(task.worktree, files);
    expect(readFileSync(join(task.worktree, 'build.txt'), 'utf8')).toBe('built\n');
  });

  it('recovery stops the processes the killed run left behind before running the step again', async () => {
    r = crashRepo({ hang: HANG });
    const started = startTask(r, 'hang');
    const pidFile = join(r.scratch, 'orphan.pid');
    const { dir, hook: seen } = await waitForHook(
      r,
      (h) => runningCommand('write')(h) && existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'),
      'the hanging command',
    );
    const owner = JSON.parse(readFileSync(join(dir, 'owner.json'), 'utf8'));
    await sigkill(started.child, dir);
    expectIntactAfterKill(dir, seen);
    const orphan = Number(readFileSync(pidFile, 'utf8'));
    expect(owner.process_groups.map((g: { pid: number }) => g.pid)).toContain(orphan);
    expect(isAlive(orphan)).toBe(true);

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.diagnosis.stopped_processes).toContain(orphan);
    expect(isAlive(orphan)).toBe(false);
    const crash = readHook(dir).history.find((e) => e.trigger === 'crash_detected');
    expect(crash?.details?.['stopped_processes']).toContain(orphan);
  });
});

describe('SIGKILL during validation', () => {
  it('a validation killed on its only attempt is run again by `atlas recover --yes` (a crash is not a failure)', async () => {
    r = crashRepo({ checklike: CHECK_LIKE });
    const started = startTask(r, 'checklike');
    const { dir, hook: seen } = await waitForHook(r, validating('validate'), 'validation running');
    await sigkill(started.child, dir);
    expect(expectIntactAfterKill(dir, seen).state).toBe('step_validating');
    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    const hook = readHook(dir);
    expect(hook.state).toBe('completed');
    expect(hook.recovery?.recommended_action).toBe('retry_step');
  });

  it('the validation is run again and the task completes', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, validating('validate'), 'validation running');
    await sigkill(started.child, dir);
    const afterKill = expectIntactAfterKill(dir, seen);
    expect(afterKill.state).toBe('step_validating');
    const task = readTaskJson(dir);
    const files = treeFiles(task.worktree);

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.diagnosis.recovery).toMatchObject({
      was_validating: true,
      validation_cmd: 'sleep 0.4 && test -f prepare.txt && test -f build.txt',
      recommended_action: 'retry_step',
      last_known_state: 'step_validating',
    });
    expect(rec.result.state).toBe('completed');
    expectHistoryKept(afterKill.history, readHook(dir).history);
    expectNoFileLost(task.worktree, files);
    // The commit step ran after the recovered validation: the work is committed.
    expect(git(task.worktree, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort()).toEqual([
      'build.log',
      'build.txt',
      'prepare.txt',
    ]);
  });
});

describe('SIGKILL between steps', () => {
  it('the task continues with the next step from its start', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: frozen } = await killBetweenSteps(r, started.child);
    const afterKill = expectIntactAfterKill(dir, frozen);
    const task = readTaskJson(dir);
    const files = treeFiles(task.worktree);
    const done = afterKill.history.filter((e) => e.trigger === 'step_complete').length;

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.diagnosis.step).toBeNull();
    expect(rec.result.diagnosis.next_step).toMatchObject({ index: done });
    expect(rec.result).toMatchObject({ action: 'retry_step', entry: { kind: 'continue' }, state: 'completed' });
    const final = readHook(dir);
    expectHistoryKept(afterKill.history, final.history);
    // No step ran twice: one start per step.
    const starts = final.history.filter((e) => e.trigger === 'step_start').map((e) => e.details?.['step_index']);
    expect(starts).toEqual([0, 1, 2, 3]);
    expectNoFileLost(task.worktree, files);
  });
});

describe('retry from a checkpoint', () => {
  it('saves the uncommitted work on an atlas/recovery branch, resets to the checkpoint, and completes', async () => {
    r = crashRepo({ staged: STAGED });
    const started = startTask(r, 'staged');
    const { dir, hook: seen } = await waitForHook(
      r,
      (h) =>
        h.state === 'step_running' &&
        h.current_step?.step_name === 'build' &&
        h.checkpoints.some((c) => c.description === 'part 1 committed') &&
        existsSync(join(r.scratch, 'build-hung')),
      'build hanging after its checkpoint',
    );
    await sigkill(started.child, dir);
    const afterKill = expectIntactAfterKill(dir, seen);
    const task = readTaskJson(dir);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const files = treeFiles(task.worktree);
    expect(files.get('part2.txt')).toBe('part2\n');
    const checkpoint = afterKill.checkpoints.find((c) => c.description === 'part 1 committed')!;

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result).toMatchObject({
      action: 'retry_from_checkpoint',
      reset_to: { checkpoint_id: checkpoint.checkpoint_id, commit: checkpoint.git_commit },
      state: 'completed',
    });
    const saved = rec.result.saved_work;
    expect(saved.saved).toBe(true);
    expect(saved.branch).toMatch(new RegExp(`^atlas/recovery/${task.id}/\\d{8}-\\d{6}$`));
    expect(git(task.worktree, 'show', `${saved.branch}:part2.txt`)).toBe('part2');
    expect(git(task.worktree, 'show', `${saved.branch}:notes/draft.md`)).toBe('draft');
    const final = readHook(dir);
    expectHistoryKept(afterKill.history, final.history);
    expect(final.history.map((e) => e.trigger)).toEqual(expect.arrayContaining(['crash_detected', 'work_saved', 'checkpoint_restored']));
    expectNoFileLost(task.worktree, files, saved.branch);
    const markdown = readFileSync(join(dir, 'HOOK.md'), 'utf8');
    expect(markdown).toContain(saved.branch);
  });
});

describe('pid reuse', () => {
  it('an owner.json naming a live pid of another process is a crash, and that process is left alone', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, runningCommand('prepare'), 'prepare running');
    await sigkill(started.child, dir);
    expectIntactAfterKill(dir, seen);
    // Another process now has "the owner's" pid: same pid, another start identity, fresh heartbeat.
    const stranger = spawn('sleep', ['30'], { stdio: 'ignore' });
    const ownerPath = join(dir, 'owner.json');
    const owner = JSON.parse(readFileSync(ownerPath, 'utf8'));
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const forged = {
      ...owner,
      pid: stranger.pid,
      process_start: 'linux:another-boot:12345',
      heartbeat_at: now,
      process_groups: [{ pid: stranger.pid, process_start: 'linux:another-boot:12345' }],
    };
    writeFileSync(ownerPath, JSON.stringify(forged));
    try {
      const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
      expect(listed).toMatchObject({ activity: 'crashed', crash_type: 'signal' });
      expect(listed.note).toContain(`pid ${stranger.pid} now belongs to another process`);

      const rec = await recover(r, ['--yes']);
      expect(rec.code, rec.stderr).toBe(0);
      expect(rec.result.diagnosis).toMatchObject({ crash_type: 'signal', previous_owner: { pid: stranger.pid }, stopped_processes: [] });
      expect(rec.result.diagnosis.liveness).toContain('now belongs to another process');
      expect(rec.result.state).toBe('completed');
      expect(isAlive(stranger.pid!)).toBe(true);
    } finally {
      stranger.kill('SIGKILL');
    }
  });
});

// Crash injection with real processes: `atlas start` on slow templates, SIGKILL at chosen moments
// (during a command step, during validation, between steps), then `atlas recover` finishes the
// task. After every kill hook.json parses, history lost nothing and no file of the working tree
// (committed or not) is gone, unless saved where recovery said.
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import { git } from './helpers/core-fixtures.js';
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
  installHangingClaude,
  spawnAtlas,
  startTask,
  taskDirs,
  treeFiles,
  validating,
  waitForHook,
} from './helpers/recovery-crash-fixtures.js';

// prepare is safe to rerun (idempotent: true); build appends to a log, so it is not.
const SLOW = `name: slow
branch_prefix: slow/
steps:
  - name: prepare
    type: command
    idempotent: true
    max_attempts: 3
    run: "sleep 0.4 && echo prepared > prepare.txt"
  - name: build
    type: command
    max_attempts: 3
    run: "echo built >> build.log && sleep 0.4 && echo built > build.txt"
  - name: validate
    type: validation
    max_attempts: 3
    commands: ["sleep 0.4 && test -f prepare.txt && test -f build.txt"]
  - name: commit
    type: git
    action: commit
`;

// build commits part 1, records a checkpoint of that commit, then writes part 2 and hangs the
// first time (the marker lives outside the tree): a crash there is retried from the checkpoint.
const STAGED = `name: staged
steps:
  - name: prepare
    type: command
    idempotent: true
    run: "echo prepared > prepare.txt && git add -A && git commit -q -m prepare"
  - name: build
    type: command
    max_attempts: 3
    run:
      - "echo part1 > part1.txt && git add part1.txt && (git diff --cached --quiet || git commit -q -m part1) && node \\"$CRASH_ATLAS\\" checkpoint 'part 1 committed' --task \\"$ATLAS_TASK_ID\\" --quiet"
      - "echo part2 > part2.txt && mkdir -p notes && echo draft > notes/draft.md && if [ -e \\"$CRASH_SCRATCH/build-hung\\" ]; then true; else touch \\"$CRASH_SCRATCH/build-hung\\"; sleep 30; fi"
  - name: commit
    type: git
    action: commit
`;

// The first run of write hangs after writing its pid (so the test can watch the orphan).
const HANG = `name: hang
steps:
  - name: write
    type: command
    idempotent: true
    max_attempts: 3
    run: "echo written > written.txt && if [ -e \\"$CRASH_SCRATCH/hung\\" ]; then true; else touch \\"$CRASH_SCRATCH/hung\\"; echo $$ > \\"$CRASH_SCRATCH/orphan.pid\\"; sleep 30; fi"
`;

// Like the built-in check: one validation step with the default max_attempts (1).
const CHECK_LIKE = `name: checklike
steps:
  - name: validate
    type: validation
    commands: ["sleep 0.4 && echo checked"]
`;

const QUICK = `name: quick
steps:
  - name: touch
    type: command
    run: "echo quick > quick.txt"
`;

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
    expect(rec.result.diagnosis).toMatchObject({ kind: 'crash', crash_type: 'signal', state_before: 'step_running', step: { name: 'prepare', attempt: 1 } });
    const final = readHook(dir);
    expect(final.state).toBe('completed');
    expectHistoryKept(afterKill.history, final.history);
    expect(final.history.filter((e) => e.trigger === 'step_start' && e.details?.['step_index'] === 0).map((e) => e.details?.['attempt'])).toEqual([1, 2]);
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
    const { dir, hook: seen } = await waitForHook(r, (h) => runningCommand('write')(h) && existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 'the hanging command');
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
    expect(git(task.worktree, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort()).toEqual(['build.log', 'build.txt', 'prepare.txt']);
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
      (h) => h.state === 'step_running' && h.current_step?.step_name === 'build' && h.checkpoints.some((c) => c.description === 'part 1 committed') && existsSync(join(r.scratch, 'build-hung')),
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
    const forged = { ...owner, pid: stranger.pid, process_start: 'linux:another-boot:12345', heartbeat_at: now, process_groups: [{ pid: stranger.pid, process_start: 'linux:another-boot:12345' }] };
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

describe('Ctrl+C', () => {
  it('SIGINT parks the task in awaiting_human (interrupted); `atlas recover` continues it to the end', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, runningCommand('build'), 'build running');
    started.child.kill('SIGINT');
    const result = await started.done;
    expect(result.code).toBe(130);
    const task = readTaskJson(dir);
    expect(result.stdout + result.stderr).toContain(`atlas recover --task ${task.id}`);
    const paused = expectIntactAfterKill(dir, seen);
    expect(paused.state).toBe('awaiting_human');
    expect(paused.history.at(-1)).toMatchObject({ trigger: 'interrupted', to_state: 'awaiting_human', details: { signal: 'SIGINT' } });
    expect(existsSync(join(dir, 'owner.json'))).toBe(false);
    expect(readFileSync(join(dir, 'HOOK.md'), 'utf8')).toContain(`atlas resume --task ${task.id}`);
    const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
    expect(listed).toMatchObject({ activity: 'paused', note: 'interrupted by SIGINT during step build' });
    const files = treeFiles(task.worktree);

    const rec = await recover(r, ['--action', 'retry_step']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.diagnosis).toMatchObject({ kind: 'paused', paused_by: 'interrupted' });
    expect(rec.result.state).toBe('completed');
    expectHistoryKept(paused.history, readHook(dir).history);
    expectNoFileLost(task.worktree, files);
  });

  it('a second Ctrl+C exits at once; the task is then a crash that `atlas recover` continues at once', async () => {
    r = crashRepo({
      stubborn: `name: stubborn
steps:
  - name: wait
    type: command
    idempotent: true
    max_attempts: 3
    run: "if [ -e \\"$CRASH_SCRATCH/once\\" ]; then echo done > done.txt; else touch \\"$CRASH_SCRATCH/once\\"; trap '' TERM; sleep 20; fi"
`,
    });
    const started = startTask(r, 'stubborn');
    const { dir } = await waitForHook(r, (h) => runningCommand('wait')(h) && existsSync(join(r.scratch, 'once')), 'the stubborn command');
    started.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 300));
    started.child.kill('SIGINT');
    const result = await started.done;
    expect(result.code).toBe(130);
    const task = readTaskJson(dir);
    expect(result.stderr).toContain(`forced exit; the task can be continued with atlas recover --task ${task.id}`);
    const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
    expect(listed).toMatchObject({ activity: 'crashed', crash_type: 'signal', state: 'step_running' });
    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.state).toBe('completed');
  });

  it('`atlas resume` also continues an interrupted task', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir } = await waitForHook(r, runningCommand('prepare'), 'prepare running');
    started.child.kill('SIGTERM');
    expect((await started.done).code).toBe(130);
    const task = readTaskJson(dir);
    const resumed = await run(r, ['resume', '--task', task.id, '--no-interactive']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readHook(dir).state).toBe('completed');
  });

  it('`atlas recover` sends a task that waits for approval to `atlas resume`', async () => {
    r = crashRepo({
      approve: `name: approve
steps:
  - name: ok
    type: human
    prompt: "Ship it?"
`,
    });
    const first = await run(r, ['start', 'approve', 'needs a yes', '--no-interactive']);
    expect(first.code).toBe(5);
    const rec = await recover(r, ['--task', readTaskJson(taskDirs(r)[0]!).id, '--yes']);
    expect(rec.code).toBe(4);
    expect(rec.stderr).toContain('atlas resume --task');
  });
});

describe('SIGKILL during an agent step', () => {
  it('the retry resumes the agent\'s session with a note of what happened', async () => {
    r = crashRepo({
      agent: `name: agent
steps:
  - name: analyze
    type: ai
    prompt: "Analyze {{description}}"
`,
    });
    const log = join(r.scratch, 'claude-argv.log');
    // A stand-in for Claude Code: reports its session, then hangs on a fresh run; a resumed run finishes.
    r.env['PATH'] = `${installHangingClaude(r.scratch)}:${process.env['PATH']}`;
    r.env['FAKE_CLAUDE_LOG'] = log;
    const started = startTask(r, 'agent', 'why parseConfig crashes');
    const { dir, hook: seen } = await waitForHook(
      r,
      (h) => h.state === 'step_running' && h.current_step?.agent_session_id === 'sess-crash-1' && (h.current_step.last_output ?? '').includes('Reading'),
      'the agent session and its first output',
    );
    await sigkill(started.child, dir);
    expectIntactAfterKill(dir, seen);

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result).toMatchObject({ action: 'retry_step', state: 'completed' });
    const runs = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as string[]);
    expect(runs).toHaveLength(2);
    const resumed = runs[1]!;
    expect(resumed.slice(0, 3)).toEqual(['--resume', 'sess-crash-1', '-p']);
    expect(resumed[3]).toContain('Note from atlas recover: this step ("analyze", attempt 1/3) stopped when atlas crashed');
    expect(resumed[3]).toContain('Reading the code.');
    expect(readHook(dir).history.find((e) => e.trigger === 'step_start' && e.details?.['attempt'] === 2)).toBeDefined();
  });
});

describe('SIGKILL during setup', () => {
  it('killed while the worktree was being created: recovery creates it and runs the task from its first step', async () => {
    r = crashRepo({ slow: SLOW });
    // A git that hangs on the first `worktree add` (the moment to kill), then behaves.
    const bin = join(r.scratch, 'bin');
    mkdirSync(bin);
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(
      join(bin, 'git'),
      `#!/bin/sh\nif [ "$1" = worktree ] && [ "$2" = add ] && [ ! -e "$CRASH_SCRATCH/git-hung" ]; then\n  echo $$ > "$CRASH_SCRATCH/git-hung"; exec sleep 30\nfi\nexec ${realGit} "$@"\n`,
      { mode: 0o755 },
    );
    r.env['PATH'] = `${bin}:${process.env['PATH']}`;
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, (h) => h.state === 'initializing' && existsSync(join(r.scratch, 'git-hung')), 'worktree add hanging');
    await sigkill(started.child, dir);
    const afterKill = expectIntactAfterKill(dir, seen);
    const task = readTaskJson(dir);
    expect(existsSync(task.worktree)).toBe(false);
    try {
      const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
      expect(listed).toMatchObject({ activity: 'crashed', crash_type: 'signal', state: 'initializing' });

      const rec = await recover(r, ['--yes']);
      expect(rec.code, rec.stderr).toBe(0);
      expect(rec.result).toMatchObject({ action: 'retry_step', entry: { kind: 'continue' }, state: 'completed' });
      expect(rec.result.diagnosis.recovery.reason).toContain('while it was being set up');
      const final = readHook(dir);
      expectHistoryKept(afterKill.history, final.history);
      expect(final.history.map((e) => e.trigger)).toContain('worktree_created');
      expect(git(task.worktree, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe(task.branch);
      expect(readFileSync(join(task.worktree, 'prepare.txt'), 'utf8')).toBe('prepared\n');
    } finally {
      process.kill(Number(readFileSync(join(r.scratch, 'git-hung'), 'utf8')), 'SIGKILL');
    }
  });

  it('killed after task.json and before hook.json: recovery writes the hook atlas start would have written', async () => {
    r = crashRepo({ slow: SLOW });
    // A task that ran, then turned into the state a cut-off setup leaves: task.json, no hook, no tree.
    const done = await run(r, ['start', 'slow', 'cut short', '--no-interactive']);
    expect(done.code, done.stderr).toBe(0);
    const dir = taskDirs(r)[0]!;
    const task = JSON.parse(readFileSync(join(dir, 'task.json'), 'utf8'));
    git(r.repo, 'worktree', 'remove', '--force', task.worktree);
    git(r.repo, 'branch', '-D', task.branch);
    for (const f of ['hook.json', 'HOOK.md']) rmSync(join(dir, f));
    writeFileSync(join(dir, 'task.json'), JSON.stringify({ ...task, status: 'initializing', created_at: '2026-01-01T00:00:00Z' }));
    writeFileSync(join(dir, 'owner.json'), JSON.stringify({ pid: 2 ** 22 - 1, host: hostname(), process_start: 'x', started_at: '2026-01-01T00:00:00Z', heartbeat_at: '2026-01-01T00:00:00Z', heartbeat_interval_ms: 10_000, stale_threshold_ms: 300_000 }));

    const listed = JSON.parse((await run(r, ['status', '--json'])).stdout).tasks[0];
    expect(listed).toMatchObject({ activity: 'crashed', state: 'initializing' });
    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.state).toBe('completed');
    const hook = readHook(dir);
    expect(hook.history.slice(0, 3).map((e) => e.trigger)).toEqual(['task_start', 'hook_restored', 'crash_detected']);
    expect(hook.task_index).toBe(task.task_index);
  });
});

describe('killing the recovery itself', () => {
  it('a recovery killed while it runs the task is recovered in turn', async () => {
    r = crashRepo({ slow: SLOW });
    const started = startTask(r, 'slow');
    const { dir, hook: seen } = await waitForHook(r, runningCommand('prepare'), 'prepare running');
    await sigkill(started.child, dir);
    expectIntactAfterKill(dir, seen);
    const task = readTaskJson(dir);

    const recovering = spawnAtlas(r, ['recover', '--yes']);
    const { hook: again } = await waitForHook(r, (h) => runningCommand('build')(h), 'the recovered run reaching build');
    await sigkill(recovering, dir);
    const afterSecondKill = expectIntactAfterKill(dir, again);
    const files = treeFiles(task.worktree);

    const rec = await recover(r, ['--task', task.id, '--action', 'retry_step']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result.state).toBe('completed');
    const final = readHook(dir);
    expectHistoryKept(afterSecondKill.history, final.history);
    expect(final.history.filter((e) => e.trigger === 'crash_detected')).toHaveLength(2);
    expectNoFileLost(task.worktree, files);
  });
});


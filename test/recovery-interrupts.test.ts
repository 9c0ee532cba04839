// Crash injection, continued: Ctrl+C (SIGINT once and twice), SIGKILL during an agent step and
// during setup, and a recovery that is itself killed. Real processes and signals, as in
// recovery-crash.test.ts.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { git } from './helpers/core-fixtures.js';
import { SLOW } from './helpers/crash-templates.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { CrashRepo } from './helpers/recovery-crash-fixtures.js';
import {
  crashRepo,
  expectHistoryKept,
  expectIntactAfterKill,
  expectNoFileLost,
  installHangingClaude,
  readHook,
  readTaskJson,
  recover,
  run,
  runningCommand,
  sigkill,
  spawnAtlas,
  startTask,
  taskDirs,
  treeFiles,
  waitForHook,
} from './helpers/recovery-crash-fixtures.js';

let r: CrashRepo;

beforeAll(() => ensureBuilt(), 120_000);
afterEach(() => r?.cleanup());

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
  it("the retry resumes the agent's session with a note of what happened", async () => {
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
      (h) =>
        h.state === 'step_running' &&
        h.current_step?.agent_session_id === 'sess-crash-1' &&
        (h.current_step.last_output ?? '').includes('Reading'),
      'the agent session and its first output',
    );
    await sigkill(started.child, dir);
    expectIntactAfterKill(dir, seen);

    const rec = await recover(r, ['--yes']);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.result).toMatchObject({ action: 'retry_step', state: 'completed' });
    const runs = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as string[]);
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
    const { dir, hook: seen } = await waitForHook(
      r,
      (h) => h.state === 'initializing' && existsSync(join(r.scratch, 'git-hung')),
      'worktree add hanging',
    );
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
    writeFileSync(
      join(dir, 'owner.json'),
      JSON.stringify({
        pid: 2 ** 22 - 1,
        host: hostname(),
        process_start: 'x',
        started_at: '2026-01-01T00:00:00Z',
        heartbeat_at: '2026-01-01T00:00:00Z',
        heartbeat_interval_ms: 10_000,
        stale_threshold_ms: 300_000,
      }),
    );

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

// Tasks that stop and go on: human approval without a terminal, checkpoints from a task's
// worktree, Ctrl+C during a step (no orphans), resume, abandon.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import {
  atlas,
  ensureBuilt,
  finished,
  git,
  isAlive,
  onlyTask,
  sandbox,
  startAtlas,
  transitions,
  waitFor,
  writeFiles,
} from './helpers/engine-fixtures.js';

const REVIEW = `name: review
branch_prefix: review/
steps:
  - name: prepare
    type: command
    run: node -e "require('fs').writeFileSync('prepared.txt', 'ok')"
  - name: approve
    type: human
    prompt: "Look at {{worktree}} and approve"
  - name: finish
    type: command
    run: node -e "console.log('finished after approval')"
`;

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

describe('human steps', () => {
  it('waits with exit 5 without a terminal; checkpoints from the worktree record its commit; --approve completes', async () => {
    sb = sandbox({ '.atlas/templates/review.yaml': REVIEW });
    const first = await atlas(sb, ['start', 'review', 'ship it', '--no-interactive']);
    expect(first.code).toBe(5);
    const { task, hook } = onlyTask(sb);
    expect(first.stdout).toContain(`approve: atlas resume --task ${task.id} --approve`);
    expect(hook.state).toBe('awaiting_human');
    expect(transitions(hook).at(-1)).toBe('step_running → awaiting_human (human_approval_required)');
    expect(hook.current_step).toMatchObject({ step_name: 'approve', step_index: 1, attempt: 1 });
    expect(existsSync(join(sb.home, 'workspaces', 'ship-it', 'tasks', task.id, 'owner.json'))).toBe(false);

    // Plain `atlas resume` without a terminal cannot ask: it says what to pass.
    const asked = await atlas(sb, ['resume', '--task', task.id]);
    expect(asked.code).toBe(5);
    expect(asked.stdout).toContain('pass --approve or --reject');

    // Someone commits in the task's worktree; a checkpoint from there records that commit.
    writeFileSync(join(task.worktree, 'review-notes.txt'), 'looks good\n');
    git(task.worktree, 'add', '-A');
    git(task.worktree, 'commit', '-q', '-m', 'review notes');
    const worktreeHead = git(task.worktree, 'rev-parse', 'HEAD');
    expect(worktreeHead).not.toBe(git(sb.repo, 'rev-parse', 'HEAD'));
    const cp = await atlas(sb, ['checkpoint', 'reviewed', '--json'], { cwd: task.worktree });
    expect(cp.code).toBe(0);
    const checkpoint = JSON.parse(cp.stdout).checkpoint;
    expect(checkpoint).toMatchObject({ git_commit: worktreeHead, git_branch: 'review/ship-it', trigger: 'manual', step_name: 'approve' });

    const second = await atlas(sb, ['resume', '--task', task.id, '--approve']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('finished after approval');
    const done = onlyTask(sb).hook;
    expect(done.state).toBe('completed');
    expect(transitions(done).slice(-5)).toEqual([
      'step_running → awaiting_human (human_approval_required)',
      'awaiting_human → step_pending (step_complete)',
      'step_pending → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → completed (all_steps_complete)',
    ]);
    expect(done.history.at(-4).details).toMatchObject({ step_index: 1, decision: 'approved' });
  });

  it('--reject fails the task; abandon refuses tasks that ended', async () => {
    sb = sandbox({ '.atlas/templates/review.yaml': REVIEW });
    expect((await atlas(sb, ['start', 'review', 'nope', '--no-interactive'])).code).toBe(5);
    const { task } = onlyTask(sb);
    const rejected = await atlas(sb, ['resume', '--task', task.id, '--reject']);
    expect(rejected.code).toBe(1);
    expect(transitions(onlyTask(sb).hook).at(-1)).toBe('awaiting_human → failed (human_rejected)');
    const abandon = await atlas(sb, ['abandon', '--task', task.id, '--yes']);
    expect(abandon.code).toBe(2);
    expect(abandon.stderr).toContain('has already ended (failed)');
  });

  it('abandon moves a waiting task to abandoned and keeps its worktree', async () => {
    sb = sandbox({ '.atlas/templates/review.yaml': REVIEW });
    expect((await atlas(sb, ['start', 'review', 'later', '--no-interactive'])).code).toBe(5);
    const { task } = onlyTask(sb);
    const result = await atlas(sb, ['abandon', '--yes', '--note', 'not needed'], { cwd: task.worktree });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`its working tree is kept at ${task.worktree}`);
    const { hook } = onlyTask(sb);
    expect(hook.state).toBe('abandoned');
    expect(hook.history.at(-1)).toMatchObject({
      from_state: 'awaiting_human',
      to_state: 'abandoned',
      trigger: 'abandoned',
      details: { by: 'user', note: 'not needed' },
    });
    expect(existsSync(join(task.worktree, 'prepared.txt'))).toBe(true);
  });
});

describe('Ctrl+C during a step', () => {
  it('stops the whole process tree, parks the hook in awaiting_human, exits 130; resume finishes', async () => {
    sb = sandbox();
    const pidFile = join(sb.base, 'pids.json');
    const marker = join(sb.base, 'second-run');
    const slow = join(sb.base, 'slow.js');
    writeFileSync(
      slow,
      `const fs = require('node:fs');
const { spawn } = require('node:child_process');
if (fs.existsSync(${JSON.stringify(marker)})) { console.log('second run: quick'); process.exit(0); }
fs.writeFileSync(${JSON.stringify(marker)}, '');
const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
fs.writeFileSync(${JSON.stringify(pidFile)}, JSON.stringify({ child: process.pid, grandchild: grandchild.pid }));
console.log('working slowly');
setInterval(() => {}, 1000);
`,
    );
    writeFiles(sb.repo, {
      '.atlas/templates/slow.yaml': `name: slow\nworktree: false\nsteps:\n  - name: crunch\n    type: command\n    run: node ${slow}\n  - name: after\n    type: command\n    run: node -e "console.log('after ran')"\n`,
    });

    const child = startAtlas(sb, ['start', 'slow', 'slow job']);
    const done = finished(child);
    await waitFor(() => existsSync(pidFile), 15_000, 'the slow step to start');
    const { child: stepPid, grandchild } = JSON.parse(readFileSync(pidFile, 'utf8')) as { child: number; grandchild: number };
    expect(isAlive(stepPid)).toBe(true);
    expect(isAlive(grandchild)).toBe(true);
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    const { task, hook, dir } = onlyTask(sb);
    expect(result.stdout + result.stderr).toContain(`atlas recover --task ${task.id}`);
    await waitFor(() => !isAlive(stepPid) && !isAlive(grandchild), 5000, 'the step processes to end');
    expect(hook.state).toBe('awaiting_human');
    expect(hook.history.at(-1)).toMatchObject({
      from_state: 'step_running',
      to_state: 'awaiting_human',
      trigger: 'interrupted',
      details: { signal: 'SIGINT', step_index: 0 },
    });
    expect(existsSync(join(dir, 'owner.json'))).toBe(false);

    const resumed = await atlas(sb, ['resume', '--task', task.id]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('second run: quick');
    expect(resumed.stdout).toContain('after ran');
    const after = onlyTask(sb).hook;
    expect(after.state).toBe('completed');
    expect(transitions(after).slice(-6)).toEqual([
      'step_running → awaiting_human (interrupted)',
      'awaiting_human → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → completed (all_steps_complete)',
    ]);
    expect(after.history.at(-5).details).toEqual({ step_index: 0, attempt: 2 });
  });
});

describe('task worktrees', () => {
  it("link the main checkout's ignored node_modules, so commands can use installed dependencies, and never commit it", async () => {
    sb = sandbox({
      '.gitignore': 'node_modules/\n',
      '.atlas/templates/deps.yaml':
        'steps:\n  - name: use\n    type: command\n    run: node -e "console.log(require(\'dep\'))"\n  - name: commit\n    type: git\n    action: commit\n',
    });
    writeFiles(sb.repo, { 'node_modules/dep/index.js': "module.exports = 'dependency found';\n" });
    const result = await atlas(sb, ['start', 'deps', 'use deps']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('dependency found');
    expect(result.stderr).toContain('linked node_modules from');
    const { task, hook } = onlyTask(sb);
    expect(hook.history.find((e: any) => e.step_name === 'commit' && e.trigger === 'step_complete').details.committed).toBe(false);
    expect(git(task.worktree, 'status', '--porcelain')).toBe('');
  });
});

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { whileIndexLocked } from '../src/git/index-lock.js';
import { listTaskRefs } from '../src/store/task-store.js';
import { atlas, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

const TEMPLATE = `name: write
steps:
  - name: write
    type: command
    run: "echo hello > hello.txt"
  - name: commit
    type: git
    action: commit
    message: "add hello"
`;

describe('a template commit step with atlas git hooks installed', () => {
  it('records the commit once, under the commit step, not as a stray hook checkpoint', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
    writeFileSync(join(repo, '.atlas', 'templates', 'write.yaml'), TEMPLATE);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'template');
    const env = { ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' };
    expect((await atlas(['hook', 'install'], { cwd: repo, env })).code).toBe(0);

    const result = await atlas(['start', 'write', 'say hello', '--no-interactive'], { cwd: repo, env });
    expect(result.code, result.stderr).toBe(0);
    const ref = listTaskRefs(home)[0]!;
    const hook = JSON.parse(readFileSync(join(ref.dir, 'hook.json'), 'utf8'));
    const task = JSON.parse(readFileSync(join(ref.dir, 'task.json'), 'utf8'));
    const head = git(task.worktree, 'rev-parse', 'HEAD');
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('add hello');
    expect(hook.checkpoints.filter((c: any) => c.trigger === 'git_commit')).toEqual([]);
    const done = hook.checkpoints.filter((c: any) => c.trigger === 'step_complete' && c.step_name === 'commit');
    expect(done).toHaveLength(1);
    expect(done[0].git_commit).toBe(head);
  });
});

describe("a commit step while another git holds the tree's index", () => {
  it('waits for it (a git that a killed atlas left running) instead of failing the task', async () => {
    const home = tempDir('atlas-home-');
    const repo = makeGitRepo();
    mkdirSync(join(repo, '.atlas', 'templates'), { recursive: true });
    // The first step takes the worktree's index.lock as a running git would; the test lets go of
    // it 1.5 s later, while the commit step waits.
    writeFileSync(
      join(repo, '.atlas', 'templates', 'locked.yaml'),
      `name: locked
steps:
  - name: write
    type: command
    run: 'echo hello > hello.txt && : > "$(git rev-parse --git-path index.lock)"'
  - name: commit
    type: git
    action: commit
    message: "add hello"
`,
    );
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'template');
    const run = atlas(['start', 'locked', 'say hello', '--no-interactive'], { cwd: repo, env: { ATLAS_HOME: home } });
    const worktrees = join(repo, '.git', 'worktrees');
    let lock: string | undefined;
    for (const end = Date.now() + 30_000; lock === undefined && Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
      lock = (existsSync(worktrees) ? readdirSync(worktrees) : []).map((w) => join(worktrees, w, 'index.lock')).find((l) => existsSync(l));
    }
    expect(lock).toBeDefined();
    await new Promise((r) => setTimeout(r, 1500));
    rmSync(lock!);
    const result = await run;
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const task = JSON.parse(readFileSync(join(listTaskRefs(home)[0]!.dir, 'task.json'), 'utf8'));
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('add hello');
  });

  it('tries again only while git says the index is locked, and gives up when the wait is over', async () => {
    const locked = () => new Error("fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running");
    let calls = 0;
    await expect(whileIndexLocked(async () => (++calls < 3 ? Promise.reject(locked()) : 'done'), 5_000)).resolves.toBe('done');
    expect(calls).toBe(3);
    await expect(whileIndexLocked(() => Promise.reject(locked()), 200)).rejects.toThrow('index.lock');
    calls = 0;
    await expect(
      whileIndexLocked(async () => {
        calls++;
        throw new Error('fatal: not a git repository');
      }),
    ).rejects.toThrow('not a git repository');
    expect(calls).toBe(1);
  });
});

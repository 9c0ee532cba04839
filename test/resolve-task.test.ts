import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTask } from '../src/hook/resolve-task.js';
import { createFixtureTask, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

async function worktreeTask(home: string, repo: string, branch: string, workspace: string) {
  const wt = join(tempDir(), workspace);
  git(repo, 'worktree', 'add', '-q', '-b', branch, wt);
  return createFixtureTask({ home, repo, worktree: wt, workspace });
}

describe('which task a command means', () => {
  it("inside a task's worktree: that task", async () => {
    const home = tempDir();
    const repo = makeGitRepo();
    const a = await worktreeTask(home, repo, 'fix/a', 'a');
    await worktreeTask(home, repo, 'fix/b', 'b');
    expect(resolveTask({ cwd: a.task.worktree, home })?.ref.id).toBe(a.ref.id);
    expect(resolveTask({ cwd: a.task.worktree, home, strict: true })?.ref.id).toBe(a.ref.id);
  });

  it('from the main checkout: the only live task of the repository, but never for checkpoints', async () => {
    const home = tempDir();
    const repo = makeGitRepo();
    const a = await worktreeTask(home, repo, 'fix/a', 'a');
    expect(resolveTask({ cwd: repo, home })?.ref.id).toBe(a.ref.id);
    expect(resolveTask({ cwd: repo, home, strict: true })).toBeUndefined();
  });

  it('from the main checkout with two live tasks: ambiguous, so none', async () => {
    const home = tempDir();
    const repo = makeGitRepo();
    await worktreeTask(home, repo, 'fix/a', 'a');
    await worktreeTask(home, repo, 'fix/b', 'b');
    expect(resolveTask({ cwd: repo, home })).toBeUndefined();
  });

  it('an ended task is found only by read-only commands', async () => {
    const home = tempDir();
    const repo = makeGitRepo();
    const a = await createFixtureTask({ home, repo });
    await a.manager.transition({ to: 'abandoned', trigger: 'abandon' });
    expect(resolveTask({ cwd: repo, home })).toBeUndefined();
    expect(resolveTask({ cwd: repo, home, includeEnded: true })?.ref.id).toBe(a.ref.id);
  });

  it('outside any repository: none', () => {
    expect(resolveTask({ cwd: tempDir(), home: tempDir() })).toBeUndefined();
  });
});

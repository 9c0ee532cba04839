// Saving work before a reset: every kind of change survives and can be brought back.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetToCheckpoint, saveAndReset, saveWork } from '../src/recovery/save-work.js';
import { cleanupRecoveryFixtures, commitAll, git, makeRepo, tempHome } from './helpers/recovery-fixtures.js';

let repo: string;
let base: string;

beforeEach(() => {
  tempHome();
  repo = makeRepo();
  writeFileSync(join(repo, 'notes.md'), 'notes v0\n');
  writeFileSync(join(repo, 'gone.txt'), 'to be deleted\n');
  base = commitAll(repo, 'checkpoint commit');
});
afterEach(() => cleanupRecoveryFixtures());

const read = (p: string) => readFileSync(join(repo, p), 'utf8');

/** Every kind of uncommitted change at once. */
function makeMess(): void {
  writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 2; // unstaged edit\n');
  writeFileSync(join(repo, 'staged.txt'), 'a new staged file\n');
  git(repo, 'add', 'staged.txt');
  writeFileSync(join(repo, 'notes.md'), 'notes v1 (staged)\n');
  git(repo, 'add', 'notes.md');
  writeFileSync(join(repo, 'notes.md'), 'notes v2 (edited after staging)\n');
  mkdirSync(join(repo, 'new', 'deep'), { recursive: true });
  writeFileSync(join(repo, 'new', 'deep', 'untracked.txt'), 'untracked\n');
  rmSync(join(repo, 'gone.txt'));
  writeFileSync(join(repo, 'debug.log'), 'ignored\n');
}

describe('saveWork', () => {
  it('saves staged, unstaged, untracked and deleted files without touching the tree or the index', async () => {
    makeMess();
    const statusBefore = git(repo, 'status', '--porcelain=v1', '-uall');
    const stagedBefore = git(repo, 'diff', '--cached');
    const saved = await saveWork({ worktree: repo, taskId: 'task-20260117-143022', now: new Date('2026-01-17T14:50:07Z') });
    expect(saved.saved).toBe(true);
    if (!saved.saved) return;
    expect(saved.branch).toBe('atlas/recovery/task-20260117-143022/20260117-145007');
    expect(saved.head).toBe(base);
    expect(saved.files.sort()).toEqual(['gone.txt', 'new/', 'notes.md', 'src/app.ts', 'staged.txt'].sort());
    expect(saved.message).toContain(saved.branch);
    // Nothing disturbed.
    expect(git(repo, 'status', '--porcelain=v1', '-uall')).toBe(statusBefore);
    expect(git(repo, 'diff', '--cached')).toBe(stagedBefore);
    expect(read('notes.md')).toBe('notes v2 (edited after staging)\n');
    // The branch holds the files as they are on disk.
    expect(git(repo, 'rev-parse', saved.branch)).toBe(saved.commit);
    expect(git(repo, 'show', `${saved.branch}:src/app.ts`)).toContain('unstaged edit');
    expect(git(repo, 'show', `${saved.branch}:notes.md`)).toBe('notes v2 (edited after staging)');
    expect(git(repo, 'show', `${saved.branch}:new/deep/untracked.txt`)).toBe('untracked');
    expect(git(repo, 'show', `${saved.branch}:staged.txt`)).toBe('a new staged file');
    expect(git(repo, 'ls-tree', '-r', '--name-only', saved.branch)).not.toContain('gone.txt');
    expect(git(repo, 'ls-tree', '-r', '--name-only', saved.branch)).not.toContain('debug.log');
    // The staged state differed from the files (notes v1 vs v2), so it is kept as the second parent.
    expect(saved.index_commit).toBeDefined();
    expect(git(repo, 'rev-parse', `${saved.branch}^1`)).toBe(base);
    expect(git(repo, 'rev-parse', `${saved.branch}^2`)).toBe(saved.index_commit);
    expect(git(repo, 'show', `${saved.branch}^2:notes.md`)).toBe('notes v1 (staged)');
  });

  it('after a reset, every file comes back from the saved branch', async () => {
    writeFileSync(join(repo, 'committed-later.txt'), 'committed after the checkpoint\n');
    const head = commitAll(repo, 'work committed after the checkpoint');
    expect(head).not.toBe(base);
    makeMess();
    const saved = await saveAndReset({ worktree: repo, taskId: 'task-20260117-143022', commit: base });
    if (!saved.saved) throw new Error('expected saved work');
    // The tree is exactly the checkpoint now; ignored files are left alone.
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(base);
    expect(git(repo, 'status', '--porcelain=v1', '-uall')).toBe('');
    expect(existsSync(join(repo, 'new'))).toBe(false);
    expect(existsSync(join(repo, 'committed-later.txt'))).toBe(false);
    expect(read('gone.txt')).toBe('to be deleted\n');
    expect(read('debug.log')).toBe('ignored\n');

    // `git checkout <branch> -- .` brings back every saved file (committed, modified, staged, untracked).
    git(repo, 'checkout', saved.branch, '--', '.');
    expect(read('src/app.ts')).toContain('unstaged edit');
    expect(read('notes.md')).toBe('notes v2 (edited after staging)\n');
    expect(read('staged.txt')).toBe('a new staged file\n');
    expect(read('new/deep/untracked.txt')).toBe('untracked\n');
    expect(read('committed-later.txt')).toBe('committed after the checkpoint\n');
    // checkout adds but never deletes; restore --source reproduces deletions too.
    git(repo, 'restore', '--source', saved.branch, '--worktree', '--', '.');
    expect(existsSync(join(repo, 'gone.txt'))).toBe(false);
    // The commits made after the checkpoint are reachable from the branch.
    expect(git(repo, 'merge-base', '--is-ancestor', head, saved.branch)).toBe('');
  });

  it('`git switch` to the saved branch gives the whole saved tree', async () => {
    makeMess();
    const saved = await saveAndReset({ worktree: repo, taskId: 'task-x', commit: base });
    if (!saved.saved) throw new Error('expected saved work');
    git(repo, 'switch', '-q', saved.branch);
    expect(read('src/app.ts')).toContain('unstaged edit');
    expect(read('new/deep/untracked.txt')).toBe('untracked\n');
    expect(existsSync(join(repo, 'gone.txt'))).toBe(false);
  });

  it('a clean tree saves nothing and says so', async () => {
    const saved = await saveWork({ worktree: repo, taskId: 'task-x' });
    expect(saved).toEqual({ saved: false, head: base, message: 'the working tree has no uncommitted changes: nothing to save' });
    expect(git(repo, 'branch', '--list', 'atlas/*')).toBe('');
    // Only ignored files: still nothing to save.
    writeFileSync(join(repo, 'debug.log'), 'x\n');
    expect((await saveWork({ worktree: repo, taskId: 'task-x' })).saved).toBe(false);
  });

  it('a clean tree with commits the reset would drop keeps them on a branch', async () => {
    writeFileSync(join(repo, 'later.txt'), 'later\n');
    const head = commitAll(repo, 'after the checkpoint');
    const saved = await saveWork({ worktree: repo, taskId: 'task-x', resetTarget: base });
    expect(saved).toMatchObject({ saved: true, commit: head, files: [] });
    if (saved.saved) expect(git(repo, 'rev-parse', saved.branch)).toBe(head);
    // Reset target ahead of HEAD (nothing dropped): nothing to save.
    git(repo, 'reset', '-q', '--hard', base);
    expect((await saveWork({ worktree: repo, taskId: 'task-y', resetTarget: head })).saved).toBe(false);
  });

  it('two saves in the same second get distinct branches; no branch is ever moved', async () => {
    const now = new Date('2026-01-17T14:50:07Z');
    writeFileSync(join(repo, 'a.txt'), 'one\n');
    const first = await saveWork({ worktree: repo, taskId: 'task-x', now });
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    const second = await saveWork({ worktree: repo, taskId: 'task-x', now });
    if (!first.saved || !second.saved) throw new Error('expected saved work');
    expect(second.branch).toBe(`${first.branch}-2`);
    expect(git(repo, 'show', `${first.branch}:a.txt`)).toBe('one');
    expect(git(repo, 'show', `${second.branch}:a.txt`)).toBe('two');
  });

  it('works in a repository with no git identity configured', async () => {
    const saveGlobal = process.env['GIT_CONFIG_GLOBAL'];
    process.env['GIT_CONFIG_GLOBAL'] = '/dev/null';
    try {
      git(repo, 'config', '--unset', 'user.name');
      git(repo, 'config', '--unset', 'user.email');
      writeFileSync(join(repo, 'a.txt'), 'x\n');
      const saved = await saveWork({ worktree: repo, taskId: 'task-x' });
      expect(saved.saved).toBe(true);
      if (saved.saved) expect(git(repo, 'log', '-1', '--format=%an <%ae>', saved.branch)).toBe('atlas <atlas@localhost>');
    } finally {
      if (saveGlobal === undefined) delete process.env['GIT_CONFIG_GLOBAL'];
      else process.env['GIT_CONFIG_GLOBAL'] = saveGlobal;
    }
  });

  it('waits for a git that still holds the index (one a killed atlas left running), then resets', async () => {
    writeFileSync(join(repo, 'notes.md'), 'edited\n');
    const lock = join(repo, '.git', 'index.lock');
    writeFileSync(lock, '');
    const released = setTimeout(() => rmSync(lock), 700);
    const started = Date.now();
    await resetToCheckpoint(repo, base);
    clearTimeout(released);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(read('notes.md')).toBe('notes v0\n');
  });

  it('refuses to reset to a commit that does not exist, before touching anything', async () => {
    makeMess();
    const status = git(repo, 'status', '--porcelain=v1', '-uall');
    await expect(saveAndReset({ worktree: repo, taskId: 'task-x', commit: 'f'.repeat(40) })).rejects.toThrow(/not in the repository/);
    await expect(resetToCheckpoint(repo, 'f'.repeat(40))).rejects.toThrow(/not in the repository/);
    expect(git(repo, 'status', '--porcelain=v1', '-uall')).toBe(status);
    expect(git(repo, 'branch', '--list', 'atlas/*')).toBe('');
  });
});

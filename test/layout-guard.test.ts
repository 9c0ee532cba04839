// The layout guard in this process, on real repositories: what atlas checks after each sandboxed
// command. A planted commondir and a loose ref shadowing a packed-only branch are moved into the
// task folder (nothing of the user's is touched) and stop the task; an ordinary tree passes; a
// changed .git pointer is refused with its own error.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AtlasError, EXIT } from '../src/domain/errors.js';
import { checkLayoutAfterCommand } from '../src/exec/sandbox/layout-guard.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

function setup(): { repo: string; taskDir: string } {
  const repo = makeGitRepo();
  const taskDir = tempDir('atlas-layout-task-');
  return { repo, taskDir };
}

describe('checkLayoutAfterCommand', () => {
  it('passes an ordinary tree, a folder that is no repository, and a linked worktree', () => {
    const { repo, taskDir } = setup();
    expect(checkLayoutAfterCommand(repo, taskDir)).toBeUndefined();
    expect(checkLayoutAfterCommand(tempDir('atlas-plain-'), taskDir)).toBeUndefined();
    const linked = join(tempDir('atlas-linked-'), 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'task', linked);
    expect(checkLayoutAfterCommand(linked, taskDir)).toBeUndefined();
  });

  it('moves a planted commondir into the task folder and stops the task', () => {
    const { repo, taskDir } = setup();
    const evil = tempDir('atlas-evil-git-');
    writeFileSync(join(repo, '.git', 'commondir'), `${evil}\n`);
    const error = checkLayoutAfterCommand(repo, taskDir);
    expect(error).toBeInstanceOf(AtlasError);
    expect(error!.exitCode).toBe(EXIT.failure);
    expect(error!.message).toContain('commondir');
    expect(existsSync(join(repo, '.git', 'commondir'))).toBe(false);
    const kept = readdirSync(join(taskDir, 'refused'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(taskDir, 'refused', kept[0]!), 'utf8')).toBe(`${evil}\n`);
  });

  it('says so when the planted commondir cannot be moved away', () => {
    const { repo, taskDir } = setup();
    writeFileSync(join(repo, '.git', 'commondir'), '/elsewhere\n');
    // A file where the refused folder goes: the move fails (even as root).
    writeFileSync(join(taskDir, 'refused'), '');
    const error = checkLayoutAfterCommand(repo, taskDir);
    expect(error?.message).toMatch(/could not be moved away: remove it/);
    expect(existsSync(join(repo, '.git', 'commondir'))).toBe(true);
  });

  it("refuses a .git file that names a folder of the step's choosing", () => {
    const { taskDir } = setup();
    const tree = tempDir('atlas-pointer-');
    const other = makeGitRepo();
    writeFileSync(join(tree, '.git'), `gitdir: ${join(other, '.git')}\n`);
    const error = checkLayoutAfterCommand(tree, taskDir);
    expect(error).toBeInstanceOf(AtlasError);
    expect(error!.message).toMatch(/layout/);
  });

  it("moves a new loose ref that shadows a packed-only branch, and keeps the task's own and protected ones", () => {
    const { repo, taskDir } = setup();
    git(repo, 'branch', 'release');
    git(repo, 'pack-refs', '--all');
    const since = Date.now() - 1000;
    // The step's own branch (checked out) and a protected path are left alone.
    const head = git(repo, 'rev-parse', 'HEAD');
    writeFileSync(join(repo, '.git', 'refs', 'heads', 'main'), `${head}\n`);
    expect(checkLayoutAfterCommand(repo, taskDir, [], since)).toBeUndefined();
    const loose = join(repo, '.git', 'refs', 'heads', 'release');
    writeFileSync(loose, `${head}\n`);
    expect(checkLayoutAfterCommand(repo, taskDir, [loose], since)).toBeUndefined();
    // Written before the command began: not the step's.
    expect(checkLayoutAfterCommand(repo, taskDir, [], Date.now() + 60_000)).toBeUndefined();
    const error = checkLayoutAfterCommand(repo, taskDir, [], since);
    expect(error?.message).toContain('refs/heads/release');
    expect(existsSync(loose)).toBe(false);
    expect(readdirSync(join(taskDir, 'refused')).some((f) => f.startsWith('refs_heads_release-'))).toBe(true);
    expect(git(repo, 'rev-parse', 'release')).toBe(head);
  });

  it('passes a repository without packed-refs', () => {
    const { repo, taskDir } = setup();
    expect(existsSync(join(repo, '.git', 'packed-refs'))).toBe(false);
    expect(checkLayoutAfterCommand(repo, taskDir, [], 0)).toBeUndefined();
  });
});

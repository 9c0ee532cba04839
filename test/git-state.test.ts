import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { locateWorktree } from '../src/git/locate.js';
import { snapshotFile } from '../src/git/snapshot.js';
import { parseStatusV2, readGitState } from '../src/git/state.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

describe('git state', () => {
  it('reads branch, commit, dirty and changed paths of a real tree', async () => {
    const repo = makeGitRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const head = git(repo, 'rev-parse', 'HEAD');
    expect(await readGitState(repo)).toEqual({ branch: 'main', commit: head, dirty: false, changed: [] });

    writeFileSync(join(repo, 'a.txt'), 'changed\n');
    writeFileSync(join(repo, 'new file.txt'), 'new\n');
    rmSync(join(repo, 'b.txt'));
    git(repo, 'mv', 'c.txt', 'renamed.txt');
    const state = await readGitState(repo);
    expect(state.dirty).toBe(true);
    expect(state.changed.sort()).toEqual(['a.txt', 'b.txt', 'new file.txt', 'renamed.txt']);
  });

  it('reports a repository with no commits and a detached HEAD', async () => {
    const dir = tempDir();
    git(dir, 'init', '-q', '-b', 'main');
    expect(await readGitState(dir)).toMatchObject({ branch: 'main', commit: undefined, dirty: false });
    const repo = makeGitRepo();
    git(repo, 'checkout', '-q', '--detach');
    expect((await readGitState(repo)).branch).toBe('HEAD');
  });

  it('parses renames without taking the original path as a change', () => {
    const out = [
      '# branch.oid abc',
      '# branch.head feat/x',
      '2 R. N... 100644 100644 100644 h1 h2 R100 new name.txt',
      'old.txt',
      '? u.txt',
      '',
    ].join('\0');
    expect(parseStatusV2(out)).toEqual({ branch: 'feat/x', commit: 'abc', dirty: true, changed: ['new name.txt', 'u.txt'] });
  });

  it('locates the tree and branch of a linked worktree without spawning git', () => {
    const repo = makeGitRepo();
    const wt = join(tempDir(), 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'fix/thing', wt);
    mkdirSync(join(wt, 'deep', 'er'), { recursive: true });
    const found = locateWorktree(join(wt, 'deep', 'er'));
    expect(found?.root).toBe(wt);
    expect(found?.branch).toBe('fix/thing');
    expect(locateWorktree(repo)?.branch).toBe('main');
  });

  it('snapshots a file with size, time and the first 16 hex of its sha256', async () => {
    const repo = makeGitRepo({ 'empty.txt': '' });
    const snap = await snapshotFile(repo, 'empty.txt');
    expect(snap).toMatchObject({ path: 'empty.txt', size: 0, sha256: 'e3b0c44298fc1c14', exists: true });
    expect(await snapshotFile(repo, 'gone.txt')).toMatchObject({ exists: false, size: 0 });
  });
});

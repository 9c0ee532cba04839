// The pieces of pristine validation in this process: the tree of a working tree's files (new and
// changed ones in, ignored ones out, the real index untouched), its copy into a folder, and a
// pristine tree made and removed with its dependency source.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import type { Task } from '../src/domain/task.js';
import { preparePristineTree, sameSetupInputs } from '../src/engine/pristine/pristine-tree.js';
import { checkoutTree, copyIndex, filesTree } from '../src/git/files-tree.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

function repo(): string {
  const dir = makeGitRepo({ 'README.md': '# r\n', '.gitignore': 'node_modules/\nignored.txt\n' });
  writeFileSync(join(dir, 'README.md'), '# changed\n');
  writeFileSync(join(dir, 'new.txt'), 'new\n');
  writeFileSync(join(dir, 'ignored.txt'), 'secret\n');
  mkdirSync(join(dir, 'node_modules'));
  writeFileSync(join(dir, 'node_modules', 'x.js'), 'swapped\n');
  return dir;
}

describe('files-tree', () => {
  it('writes out the files `git add -A` would commit, leaving the index as it was', async () => {
    const dir = repo();
    const index = join(dir, '.git', 'index');
    const before = readFileSync(index);
    const out = tempDir();
    await checkoutTree(dir, await filesTree(dir), out);
    expect(readFileSync(join(out, 'README.md'), 'utf8')).toBe('# changed\n');
    expect(readFileSync(join(out, 'new.txt'), 'utf8')).toBe('new\n');
    expect(existsSync(join(out, 'ignored.txt'))).toBe(false);
    expect(existsSync(join(out, 'node_modules'))).toBe(false);
    expect(existsSync(join(out, '.git'))).toBe(false);
    expect(readFileSync(index)).toEqual(before);
    expect(git(dir, 'status', '--porcelain')).toContain('?? new.txt');
  });

  it('copies the index with its mtime, and says when there is none', async () => {
    const dir = repo();
    const target = join(tempDir(), 'copy');
    expect(await copyIndex(dir, target)).toBe(true);
    expect(Math.abs(statSync(target).mtimeMs - statSync(join(dir, '.git', 'index')).mtimeMs)).toBeLessThan(1);
    const bare = tempDir();
    git(bare, 'init', '-q');
    expect(await copyIndex(bare, join(tempDir(), 'none'))).toBe(false);
  });
});

describe('preparePristineTree', () => {
  it("makes the tree from nothing, links the main checkout's folders for a worktree task, and removes it", async () => {
    const dir = repo();
    const taskDir = tempDir();
    mkdirSync(join(taskDir, 'pristine', 'old'), { recursive: true });
    const main = tempDir();
    mkdirSync(join(main, 'node_modules'));
    const task = { worktree: dir, repo_root: main, in_place: false, id: 'task-20260101-000000', workspace_id: 'w' } as unknown as Task;
    const tree = await preparePristineTree({
      home: tempDir(),
      task,
      taskDir,
      config: defaultConfig(),
      mode: 'local',
      runSetup: () => Promise.reject(new Error('no setup here')),
    });
    expect(tree.dependencies).toBe('repository');
    expect(existsSync(join(tree.dir, 'old'))).toBe(false);
    expect(readFileSync(join(tree.dir, 'new.txt'), 'utf8')).toBe('new\n');
    expect(tree.executor.mode).toBe('local');
    await tree.close();
    expect(existsSync(tree.dir)).toBe(false);
  });

  it('a setup that fails removes the tree and fails', async () => {
    const dir = repo();
    const taskDir = tempDir();
    const config = defaultConfig();
    config.validation.setup = ['npm ci'];
    const task = { worktree: dir, repo_root: dir, in_place: true, id: 'task-20260101-000000', workspace_id: 'w' } as unknown as Task;
    await expect(
      preparePristineTree({
        home: tempDir(),
        task,
        taskDir,
        config,
        mode: 'local',
        runSetup: () => Promise.reject(new Error('setup failed')),
      }),
    ).rejects.toThrow('setup failed');
    expect(existsSync(join(taskDir, 'pristine'))).toBe(false);
  });
});

describe('sameSetupInputs', () => {
  it('compares the lockfiles and manifests of the base commit and a tree, nothing else', async () => {
    const dir = makeGitRepo({ 'package.json': '{"name":"a"}\n', 'package-lock.json': '{}\n', 'prep.js': 'one\n' });
    const base = git(dir, 'rev-parse', 'HEAD');
    writeFileSync(join(dir, 'prep.js'), 'two\n');
    expect(await sameSetupInputs(dir, base, await filesTree(dir))).toBe(true);
    writeFileSync(join(dir, 'package-lock.json'), '{"changed":true}\n');
    expect(await sameSetupInputs(dir, base, await filesTree(dir))).toBe(false);
    expect(await sameSetupInputs(dir, '0'.repeat(40), await filesTree(dir))).toBe(false);
  });
});

describe('preparePristineTree with a setup', () => {
  it('fills the cache from the base commit, links it into a tree with the same inputs, and builds a changed one uncached', async () => {
    const dir = makeGitRepo({ 'package-lock.json': '{}\n', 'prep.sh': 'real\n', '.gitignore': 'node_modules/\n' });
    const base = git(dir, 'rev-parse', 'HEAD');
    writeFileSync(join(dir, 'prep.sh'), 'poisoned\n');
    const home = tempDir();
    const taskDir = tempDir();
    const config = defaultConfig();
    config.validation.setup = ['prep'];
    const task = {
      worktree: dir,
      repo_root: dir,
      in_place: true,
      base_commit: base,
      id: 'task-20260101-000000',
      workspace_id: 'w',
    } as unknown as Task;
    const ranIn: string[] = [];
    // Stands in for `npm ci`: what it installs comes from the tree's prep.sh.
    const runSetup = async (_command: string, where: string) => {
      ranIn.push(where);
      mkdirSync(join(where, 'node_modules'), { recursive: true });
      writeFileSync(join(where, 'node_modules', 'runner'), readFileSync(join(where, 'prep.sh')));
    };
    const first = await preparePristineTree({ home, task, taskDir, config, mode: 'local', runSetup });
    expect(first.dependencies).toMatch(/^setup:[0-9a-f]{64}$/);
    expect(ranIn).toEqual([join(taskDir, 'pristine-base')]);
    expect(readFileSync(join(first.dir, 'node_modules', 'runner'), 'utf8')).toBe('real\n');
    await first.close();
    expect(existsSync(join(taskDir, 'pristine-base'))).toBe(false);
    const again = await preparePristineTree({ home, task, taskDir, config, mode: 'local', runSetup });
    expect(again.dependencies).toBe(first.dependencies);
    expect(ranIn).toHaveLength(1);
    await again.close();
    writeFileSync(join(dir, 'package-lock.json'), '{"changed":true}\n');
    const changed = await preparePristineTree({ home, task, taskDir, config, mode: 'local', runSetup });
    expect(changed.dependencies).toMatch(/^uncached:[0-9a-f]{64}$/);
    expect(ranIn[1]).toBe(changed.dir);
    expect(readFileSync(join(changed.dir, 'node_modules', 'runner'), 'utf8')).toBe('poisoned\n');
    await changed.close();
  });
});

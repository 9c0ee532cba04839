// `atlas hook install` / `uninstall`: where hooks go, chaining of the user's own hooks,
// idempotence, and an exact restore.

import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGED_HOOKS, renderHookScript } from '../src/githooks/script.js';
import { atlas, git, makeRepo, removeTempDirs, requireBuild, tempDir } from './helpers/autockpt-fixtures.js';

beforeAll(requireBuild);
afterAll(removeTempDirs);

/** name → [bytes, mode] of every file in a hooks directory. */
function snapshot(dir: string): Record<string, [string, number]> {
  const out: Record<string, [string, number]> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    out[name] = [readFileSync(path).toString('base64'), statSync(path).mode & 0o7777];
  }
  return out;
}

const USER_HOOK = '#!/bin/sh\n# my own post-commit hook, with odd bytes: \t\u00e9\n echo mine >> "$(git rev-parse --git-dir)/mine.log"\n';

describe('hook scripts', () => {
  it('are valid POSIX sh and carry atlas paths with spaces and quotes intact', () => {
    const at = { node: "/opt/it's here/bin/node", cli: '/home/dev/my tools/atlas $HOME `x`/bin/atlas.js' };
    for (const name of MANAGED_HOOKS) {
      const script = renderHookScript(name, at);
      expect(script.startsWith('#!/bin/sh\n')).toBe(true);
      execFileSync('sh', ['-n', '-c', script]);
      const assignments = script
        .split('\n')
        .filter((l) => /^atlas_(node|cli)=/.test(l))
        .join('\n');
      const printed = execFileSync('sh', ['-c', `${assignments}\nprintf '%s\\n%s' "$atlas_node" "$atlas_cli"`], { encoding: 'utf8' });
      expect(printed).toBe(`${at.node}\n${at.cli}`);
      expect(renderHookScript(name, at)).toBe(script);
    }
  });
});

describe('atlas hook install / uninstall', () => {
  it('chains an existing hook, changes nothing the second time, and uninstall restores byte-identical files', () => {
    const home = tempDir();
    const repo = makeRepo();
    const hooks = join(repo, '.git', 'hooks');
    writeFileSync(join(hooks, 'post-commit'), USER_HOOK);
    chmodSync(join(hooks, 'post-commit'), 0o750);
    const before = snapshot(hooks);

    const first = atlas(['hook', 'install', '--json', '--repo', repo], { cwd: home, home });
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.hooks_dir).toBe(hooks);
    expect(report.hooks.map((h: { name: string; action: string }) => [h.name, h.action])).toEqual([
      ['post-commit', 'installed'],
      ['pre-push', 'installed'],
    ]);
    expect(report.hooks[0].chained).toBe(join(hooks, 'post-commit.atlas-chained'));
    // The user's hook moved aside untouched; atlas's hook is executable and marked.
    expect(readFileSync(join(hooks, 'post-commit.atlas-chained'), 'utf8')).toBe(USER_HOOK);
    expect(statSync(join(hooks, 'post-commit.atlas-chained')).mode & 0o777).toBe(0o750);
    expect(readFileSync(join(hooks, 'post-commit'), 'utf8')).toContain('# atlas-managed-hook: post-commit');
    expect(statSync(join(hooks, 'pre-push')).mode & 0o100).toBe(0o100);
    const installed = snapshot(hooks);

    const second = atlas(['hook', 'install', '--repo', repo], { cwd: home, home });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/post-commit\s+already installed/);
    expect(snapshot(hooks)).toEqual(installed);

    const removed = atlas(['hook', 'uninstall', '--json', '--repo', repo], { cwd: home, home });
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout).hooks.map((h: { action: string }) => h.action)).toEqual(['restored', 'removed']);
    expect(snapshot(hooks)).toEqual(before);

    const again = atlas(['hook', 'uninstall', '--repo', repo], { cwd: home, home });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/post-commit\s+not installed/);
    expect(snapshot(hooks)).toEqual(before);
  });

  it('installs where core.hooksPath points, and from a linked worktree into the shared hooks', () => {
    const home = tempDir();
    const repo = makeRepo();
    const custom = join(tempDir(), 'my-hooks');
    git(repo, ['config', 'core.hooksPath', custom]);
    const r = atlas(['hook', 'install', '--json'], { cwd: repo, home });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).hooks_dir).toBe(custom);
    expect(existsSync(join(custom, 'post-commit'))).toBe(true);
    expect(existsSync(join(custom, 'pre-push'))).toBe(true);
    expect(existsSync(join(repo, '.git', 'hooks', 'post-commit'))).toBe(false);

    const other = makeRepo();
    const wt = join(tempDir(), 'wt');
    git(other, ['worktree', 'add', '-q', '-b', 'side', wt]);
    const fromWorktree = atlas(['hook', 'install', '--json'], { cwd: wt, home });
    expect(fromWorktree.code, fromWorktree.stderr).toBe(0);
    expect(JSON.parse(fromWorktree.stdout).hooks_dir).toBe(join(other, '.git', 'hooks'));
  });

  it('warns when a relative core.hooksPath puts the hooks inside the working tree', () => {
    const home = tempDir();
    const repo = makeRepo();
    mkdirSync(join(repo, '.githooks'));
    git(repo, ['config', 'core.hooksPath', '.githooks']);
    const r = atlas(['hook', 'install'], { cwd: repo, home });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(repo, '.githooks', 'post-commit'))).toBe(true);
    expect(r.stderr).toContain('inside the working tree');
    expect(r.stderr).toContain('relative (.githooks)');
  });

  it('refuses, changing nothing, when both a user hook and a chained copy exist', () => {
    const home = tempDir();
    const repo = makeRepo();
    const hooks = join(repo, '.git', 'hooks');
    writeFileSync(join(hooks, 'post-commit'), '#!/bin/sh\necho a\n', { mode: 0o755 });
    writeFileSync(join(hooks, 'post-commit.atlas-chained'), '#!/bin/sh\necho b\n', { mode: 0o755 });
    const before = snapshot(hooks);
    const r = atlas(['hook', 'install'], { cwd: repo, home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('atlas will not overwrite either');
    expect(snapshot(hooks)).toEqual(before);
  });

  it('says clearly when the directory is not a git repository', () => {
    const home = tempDir();
    const r = atlas(['hook', 'install', '--repo', home], { cwd: home, home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not inside a git working tree');
    expect(r.stderr).toContain('hint:');
  });
});

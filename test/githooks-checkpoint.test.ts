// Real git commits and pushes with atlas's hooks installed: the task that owns the worktree gets
// git_commit / git_push checkpoints pinned to the right commit; everything else stays silent;
// the user's own hooks keep running and keep their say over the push.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installGitHooks } from '../src/githooks/install.js';
import type { TaskFixture } from './helpers/autockpt-fixtures.js';
import {
  atlas,
  cleanEnv,
  git,
  gitRun,
  makeRepo,
  makeTask,
  readHook,
  removeTempDirs,
  requireBuild,
  tempDir,
  waitFor,
} from './helpers/autockpt-fixtures.js';

beforeAll(requireBuild);
afterAll(removeTempDirs);

function install(repo: string, home: string): void {
  const r = atlas(['hook', 'install', '--repo', repo], { cwd: repo, home });
  expect(r.code, r.stderr).toBe(0);
}

function commit(
  dir: string,
  env: NodeJS.ProcessEnv,
  file = 'change.txt',
  message = 'Add a change',
): { sha: string; stdout: string; stderr: string } {
  writeFileSync(join(dir, file), `${Math.random()}\n`);
  git(dir, ['add', '-A'], env);
  const r = gitRun(dir, ['commit', '-q', '-m', message], env);
  expect(r.code, r.stderr).toBe(0);
  return { sha: git(dir, ['rev-parse', 'HEAD'], env), stdout: r.stdout, stderr: r.stderr };
}

function checkpointsOf(t: TaskFixture, trigger: string) {
  return readHook(t.ref).checkpoints.filter((c) => c.trigger === trigger);
}

describe('post-commit hook', () => {
  it('records a git_commit checkpoint with the commit sha and subject (ATLAS_HOOK_SYNC=1), printing nothing', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    install(repo, home);
    const env = cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' });
    const { sha, stdout, stderr } = commit(t.worktree, env, 'parser.ts', 'Add nil check for config.Server');
    expect(stdout).toBe('');
    expect(stderr).toBe('');
    const [checkpoint, ...rest] = checkpointsOf(t, 'git_commit');
    expect(rest).toEqual([]);
    expect(checkpoint).toMatchObject({
      trigger: 'git_commit',
      git_commit: sha,
      description: 'Add nil check for config.Server',
      git_branch: t.task.branch,
      git_dirty: false,
      step_name: 'implement',
    });
    expect(checkpoint!.checkpoint_id).toMatch(/^ckpt-[0-9a-f]{8}$/);
    // The timeline people read shows it too.
    const markdown = readFileSync(join(t.ref.dir, 'HOOK.md'), 'utf8');
    expect(markdown).toContain(sha.slice(0, 12));
    expect(markdown).toContain('git_commit');
    const timeline = atlas(['hook', 'checkpoints'], { cwd: t.worktree, home });
    expect(timeline.stdout).toMatch(new RegExp(`git_commit\\s+implement\\s+${sha.slice(0, 12)}\\s+Add nil check for config.Server`));
  });

  it('records it in the background by default, pinned to the commit that fired it', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    install(repo, home);
    const env = cleanEnv({ ATLAS_HOME: home });
    const first = commit(t.worktree, env, 'a.txt', 'First change');
    const second = commit(t.worktree, env, 'b.txt', 'Second change');
    const recorded = await waitFor(
      () => {
        const list = checkpointsOf(t, 'git_commit');
        return list.length >= 2 ? list : undefined;
      },
      20_000,
      'two git_commit checkpoints',
    );
    const bySha = Object.fromEntries(recorded.map((c) => [c.git_commit, c.description]));
    expect(bySha).toEqual({ [first.sha]: 'First change', [second.sha]: 'Second change' });
  });

  it('records nothing, silently, for a commit in a repository no task owns', async () => {
    const home = tempDir();
    const repo = makeRepo();
    install(repo, home);
    for (const extra of [{ ATLAS_HOOK_SYNC: '1' }, {}]) {
      const env = cleanEnv({ ATLAS_HOME: home, ...extra });
      const r = commit(repo, env);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe('');
    }
    expect(existsSync(join(home, 'workspaces'))).toBe(false);
  });

  it('does not attach a commit in the main checkout to a task running in a linked worktree', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    install(repo, home);
    commit(repo, cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' }));
    expect(checkpointsOf(t, 'git_commit')).toEqual([]);
  });

  it("keeps running the user's own post-commit hook, with its output", async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    const log = join(tempDir(), 'user-hook.log');
    writeFileSync(
      join(repo, '.git', 'hooks', 'post-commit'),
      `#!/bin/sh\necho "user hook ran $#" >> '${log}'\necho "hello from the user hook" >&2\n`,
      { mode: 0o755 },
    );
    install(repo, home);
    const r = commit(t.worktree, cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' }));
    expect(readFileSync(log, 'utf8')).toBe('user hook ran 0\n');
    expect(r.stderr).toBe('hello from the user hook\n');
    expect(checkpointsOf(t, 'git_commit').map((c) => c.git_commit)).toEqual([r.sha]);
  });

  it('prints what it did with ATLAS_HOOK_VERBOSE=1', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    install(repo, home);
    const r = commit(t.worktree, cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1', ATLAS_HOOK_VERBOSE: '1' }));
    expect(r.stderr).toMatch(/ckpt-[0-9a-f]{8}\s+task-/);
    expect(r.stderr).toContain('(git_commit)');
    const outside = makeRepo();
    install(outside, home);
    const quiet = commit(outside, cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1', ATLAS_HOOK_VERBOSE: '1' }));
    expect(quiet.stderr).toContain('no running atlas task owns this directory');
  });

  it('exits 0 quietly when atlas cannot be found at all', async () => {
    const home = tempDir();
    const repo = makeRepo();
    await installGitHooks({ repo, atlas: { node: '/nonexistent/bin/node', cli: '/nonexistent/atlas/bin/atlas.js' } });
    const env = cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1', PATH: pathWithGitOnly() });
    const r = commit(repo, env);
    expect(r.stderr).toBe('');
    const verbose = commit(repo, { ...env, ATLAS_HOOK_VERBOSE: '1' });
    expect(verbose.stderr).toContain('atlas not found');
  });

  it('finds atlas by its embedded paths when neither atlas nor node is on PATH', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    install(repo, home);
    const r = commit(t.worktree, cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1', PATH: pathWithGitOnly() }));
    expect(checkpointsOf(t, 'git_commit').map((c) => c.git_commit)).toEqual([r.sha]);
  });
});

/** A PATH holding git and nothing else (no node, no atlas). */
function pathWithGitOnly(): string {
  const bin = join(tempDir(), 'bin');
  mkdirSync(bin);
  symlinkSync(execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim(), join(bin, 'git'));
  return bin;
}

describe('pre-push hook', () => {
  it('gives the user hook the ref lines, lets its failure block the push, and records git_push only for a push that goes ahead', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const remote = join(tempDir(), 'remote.git');
    git(tempDir(), ['init', '-q', '--bare', remote]);
    git(repo, ['remote', 'add', 'origin', remote]);
    const t = await makeTask({ home, repo });
    const seen = join(tempDir(), 'stdin.log');
    const verdict = join(tempDir(), 'verdict');
    writeFileSync(verdict, '1');
    writeFileSync(
      join(repo, '.git', 'hooks', 'pre-push'),
      `#!/bin/sh\necho "args: $1 $2" > '${seen}'\ncat >> '${seen}'\nexit $(cat '${verdict}')\n`,
      { mode: 0o755 },
    );
    install(repo, home);
    const env = cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' });
    const { sha } = commit(t.worktree, env);

    const refused = gitRun(t.worktree, ['push', '-q', 'origin', t.task.branch], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('failed to push');
    expect(gitRun(remote, ['rev-parse', '--verify', '-q', `refs/heads/${t.task.branch}`], env).code).not.toBe(0);
    const lines = readFileSync(seen, 'utf8').split('\n');
    expect(lines[0]).toBe(`args: origin ${remote}`);
    expect(lines[1]).toBe(`refs/heads/${t.task.branch} ${sha} refs/heads/${t.task.branch} ${'0'.repeat(40)}`);
    expect(checkpointsOf(t, 'git_push')).toEqual([]);

    writeFileSync(verdict, '0');
    const pushed = gitRun(t.worktree, ['push', '-q', 'origin', t.task.branch], env);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stderr).toBe('');
    expect(git(remote, ['rev-parse', `refs/heads/${t.task.branch}`], env)).toBe(sha);
    const [checkpoint, ...rest] = checkpointsOf(t, 'git_push');
    expect(rest).toEqual([]);
    expect(checkpoint).toMatchObject({ git_commit: sha, description: `push to origin: ${t.task.branch}` });
  });
});

describe('which task a checkpoint attaches to', () => {
  it('uses an in-place task for commits in the repository itself, and no ended task', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo, inPlace: true });
    install(repo, home);
    const env = cleanEnv({ ATLAS_HOME: home, ATLAS_HOOK_SYNC: '1' });
    const { sha } = commit(repo, env);
    expect(checkpointsOf(t, 'git_commit').map((c) => c.git_commit)).toEqual([sha]);

    await t.manager.transition({ to: 'abandoned', trigger: 'abandon' });
    const after = commit(repo, env);
    expect(after.stderr).toBe('');
    expect(checkpointsOf(t, 'git_commit').map((c) => c.git_commit)).toEqual([sha]);
    const manual = atlas(['checkpoint', 'by hand'], { cwd: repo, home });
    expect(manual.code).toBe(4);
    expect(manual.stderr).toContain('no running atlas task owns this directory or branch');
  });

  it('rejects a --commit that is not a sha', async () => {
    const home = tempDir();
    const repo = makeRepo();
    const t = await makeTask({ home, repo });
    const r = atlas(['checkpoint', 'x', '--commit', 'HEAD~1'], { cwd: t.worktree, home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--commit expects a commit sha');
    expect(readdirSync(t.ref.dir)).toContain('hook.json');
    expect(readHook(t.ref).checkpoints).toEqual([]);
  });
});

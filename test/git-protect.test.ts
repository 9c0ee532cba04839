// A sandboxed step cannot make atlas's own (unsandboxed) git run its commands: the tree's `.git`
// pointer, its git folder's pointers and submodule configs are read-only in the sandbox; atlas's
// git ignores core.fsmonitor and does not run status inside submodules; recovery runs git only
// in submodules whose repository is under the git folder's modules/.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { ProcessGroups } from '../src/exec/process-groups.js';
import { runProcess } from '../src/exec/run-process.js';
import { createSandboxExecutor } from '../src/exec/sandbox/executor.js';
import { gitProtectedPaths, moduleProtections } from '../src/exec/sandbox/git-protect.js';
import { gitWritePaths, stepGit } from '../src/exec/sandbox/policy.js';
import { resetSandbox } from '../src/exec/sandbox/runtime.js';
import { crossTaskObjects } from '../src/git/cross-objects.js';
import { runGit } from '../src/git/run-git.js';
import { safeGitConfigArgs, withSafeGitConfig } from '../src/git/safe-config.js';
import { readGitState } from '../src/git/state.js';
import { listSubmodules } from '../src/recovery/save-submodules.js';
import { makeGitRepo, tempDir } from './helpers/core-fixtures.js';
import { skipSandbox } from './helpers/sandbox-fixtures.js';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** A repository with a linked worktree (as atlas makes for a task) and a submodule in it. */
function linkedTree(): { repo: string; tree: string; gitDir: string } {
  const lib = makeGitRepo({ 'lib.txt': 'lib\n' });
  const repo = makeGitRepo();
  git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'lib');
  git(repo, 'commit', '-q', '-m', 'lib');
  const tree = join(tempDir('atlas-gp-'), 'tree');
  git(repo, 'worktree', 'add', '-q', '-b', 'task', tree);
  git(tree, '-c', 'protocol.file.allow=always', 'submodule', 'update', '-q', '--init');
  return { repo, tree, gitDir: git(tree, 'rev-parse', '--absolute-git-dir') };
}

/** A submodule the agent made up: a gitlink in the index and a `.git` naming a repository of its own with core.fsmonitor set. */
function plantSubmodule(tree: string, marker: string): void {
  const evil = join(tree, 'evil-repo');
  mkdirSync(evil);
  git(evil, 'init', '-q');
  git(evil, 'config', 'core.fsmonitor', `touch ${marker}; false`);
  git(evil, '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-q', '--allow-empty', '-m', 'e');
  const head = git(evil, 'rev-parse', 'HEAD');
  mkdirSync(join(tree, 'fake'));
  writeFileSync(join(tree, 'fake', '.git'), `gitdir: ${join(evil, '.git')}\n`);
  writeFileSync(join(tree, 'fake', 'f.txt'), 'x\n');
  git(tree, 'update-index', '--add', '--cacheinfo', `160000,${head},fake`);
}

describe("atlas's own git", () => {
  it("does not run a planted submodule's core.fsmonitor: status, the git state, a commit", async () => {
    const repo = makeGitRepo();
    const marker = join(tempDir('atlas-gp-'), 'ran');
    plantSubmodule(repo, marker);
    // Plain git would run it (the attack is real) ...
    git(repo, 'status', '--porcelain');
    expect(existsSync(marker)).toBe(true);
    execFileSync('rm', [marker]);
    // ... atlas's does not.
    await runGit(repo, ['status', '--porcelain']);
    await readGitState(repo);
    await runGit(repo, ['add', '-A']);
    expect(existsSync(marker)).toBe(false);
  });

  it("adds its settings after the environment's own GIT_CONFIG entries", () => {
    expect(withSafeGitConfig({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'a.b', GIT_CONFIG_VALUE_0: 'c' })).toMatchObject({
      GIT_CONFIG_COUNT: '6',
      GIT_CONFIG_KEY_0: 'a.b',
      GIT_CONFIG_KEY_1: 'core.fsmonitor',
      GIT_CONFIG_VALUE_1: 'false',
      GIT_CONFIG_KEY_2: 'diff.ignoreSubmodules',
    });
    expect(withSafeGitConfig({ GIT_CONFIG_COUNT: 'junk' })).toMatchObject({ GIT_CONFIG_COUNT: '5', GIT_CONFIG_KEY_0: 'core.fsmonitor' });
    expect(withSafeGitConfig({}, { hooks: true })).toMatchObject({ GIT_CONFIG_COUNT: '4' });
    expect(safeGitConfigArgs()).toEqual([
      'core.fsmonitor=false',
      'diff.ignoreSubmodules=dirty',
      'core.hooksPath=/dev/null',
      'core.attributesFile=/dev/null',
      'protocol.ext.allow=never',
    ]);
    expect(safeGitConfigArgs({ hooks: true })).not.toContain('core.hooksPath=/dev/null');
  });
});

describe('which paths are protected', () => {
  it("a linked worktree: its .git pointer, its git folder's pointers, each submodule's config, hooks and pointer", () => {
    const { tree, gitDir } = linkedTree();
    const paths = gitProtectedPaths(tree);
    expect(paths).toEqual(
      expect.arrayContaining([
        join(tree, '.git'),
        join(gitDir, 'commondir'),
        join(gitDir, 'gitdir'),
        join(gitDir, 'modules', 'lib', 'config'),
        join(gitDir, 'modules', 'lib', 'hooks'),
        join(tree, 'lib', '.git'),
      ]),
    );
    // What a commit needs stays writable (the policy's allow list), and is not denied here.
    for (const w of gitWritePaths(tree)) expect(paths).not.toContain(w);
  });

  it("the main tree (a task in place): other worktrees' folders and the submodules; no .git, nothing", () => {
    const { repo } = linkedTree();
    const paths = gitProtectedPaths(repo);
    const dotGit = join(repo, '.git');
    expect(paths).toEqual(
      expect.arrayContaining([join(dotGit, 'worktrees'), join(dotGit, 'modules', 'lib', 'config'), join(repo, 'lib', '.git')]),
    );
    expect(paths).not.toContain(dotGit);
    expect(gitProtectedPaths(tempDir('atlas-gp-'))).toEqual([]);
    const bad = tempDir('atlas-gp-');
    writeFileSync(join(bad, '.git'), 'not a pointer');
    expect(gitProtectedPaths(bad)).toEqual([join(bad, '.git')]);
  });

  it('with no modules folder, the folder itself, so none can be planted; a deep tree is walked only so far', () => {
    const dir = join(tempDir('atlas-gp-'), 'modules');
    expect(moduleProtections(dir)).toEqual([dir]);
    let deep = dir;
    for (let i = 0; i < 10; i++) deep = join(deep, `d${i}`);
    mkdirSync(join(deep, 'objects'), { recursive: true });
    writeFileSync(join(deep, 'HEAD'), 'ref: refs/heads/main\n');
    expect(moduleProtections(dir)).toEqual([]);
  });
});

describe('recovery and submodules', () => {
  it('refuses (exit 5) to run git in a submodule whose .git names a repository outside modules/, or keeps its own', async () => {
    const { tree } = linkedTree();
    expect((await listSubmodules(tree)).map((s) => s.path)).toEqual(['lib']);
    const elsewhere = join(tempDir('atlas-gp-'), 'repo');
    mkdirSync(elsewhere);
    git(elsewhere, 'init', '-q');
    const pointer = join(tree, 'lib', '.git');
    const original = readFileSync(pointer, 'utf8');
    writeFileSync(pointer, `gitdir: ${join(elsewhere, '.git')}\n`);
    const refused = await listSubmodules(tree).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AtlasError);
    expect((refused as AtlasError).exitCode).toBe(5);
    expect((refused as AtlasError).message).toContain("submodule lib names a git folder outside the repository's modules folder");
    // A repository of its own in the submodule's folder: its config lies in the tree.
    execFileSync('rm', [pointer]);
    git(join(tree, 'lib'), 'init', '-q');
    git(join(tree, 'lib'), '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-q', '--allow-empty', '-m', 'own');
    expect(((await listSubmodules(tree).catch((e: unknown) => e)) as AtlasError).message).toContain('git submodule absorbgitdirs');
    execFileSync('rm', ['-r', pointer]);
    writeFileSync(pointer, original);
    expect((await listSubmodules(tree)).map((s) => s.path)).toEqual(['lib']);
  });
});

describe.skipIf(skipSandbox)('in the sandbox', () => {
  afterAll(() => resetSandbox());

  it('a step can commit in its linked worktree but cannot redirect its .git, its commondir or a submodule, nor plant a config', async () => {
    const { tree, gitDir } = linkedTree();
    const taskDir = tempDir('atlas-gp-task-');
    const before = {
      pointer: readFileSync(join(tree, '.git'), 'utf8'),
      commondir: readFileSync(join(gitDir, 'commondir'), 'utf8'),
      lib: readFileSync(join(gitDir, 'modules', 'lib', 'config'), 'utf8'),
    };
    // The step's objects go to the task's store (the repository's are read-only) and cross after.
    const step = stepGit(tree, taskDir);
    const policy = {
      worktree: tree,
      tmpdir: join(taskDir, 'tmp'),
      allow_write: [tree, join(taskDir, 'tmp'), ...gitWritePaths(tree), ...step.write],
      deny_write: [...gitProtectedPaths(tree), ...step.denyWrite],
      deny_read: [],
      allowed_domains: [],
      git_env: step.env!,
    };
    const executor = createSandboxExecutor(policy, taskDir);
    const tries = [
      'echo "gitdir: /tmp/evil" > .git',
      `echo /tmp/evil > ${join(gitDir, 'commondir')}`,
      `printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> ${join(gitDir, 'modules', 'lib', 'config')}`,
      'echo "gitdir: /tmp/evil" > lib/.git',
    ].map((t) => `(${t}) 2>/dev/null && echo WROTE || echo REFUSED`);
    const commit = 'echo work > work.txt && git add work.txt && git -c user.email=a@b -c user.name=a commit -q -m work && echo COMMITTED';
    const result = await runProcess({
      command: [...tries, commit].join('; '),
      shell: true,
      cwd: tree,
      capture: true,
      groups: new ProcessGroups(),
      executor,
    });
    const out = result.stdout.toString();
    expect(out.match(/REFUSED/g)).toHaveLength(4);
    expect(out).not.toContain('WROTE');
    expect(out).toContain('COMMITTED');
    expect(readFileSync(join(tree, '.git'), 'utf8')).toBe(before.pointer);
    expect(readFileSync(join(gitDir, 'commondir'), 'utf8')).toBe(before.commondir);
    expect(readFileSync(join(gitDir, 'modules', 'lib', 'config'), 'utf8')).toBe(before.lib);
    await crossTaskObjects({ worktree: tree, taskDir, branch: git(tree, 'symbolic-ref', '--short', 'HEAD') });
    expect(git(tree, 'log', '-1', '--format=%s')).toBe('work');
    await executor.close?.();
  });
});

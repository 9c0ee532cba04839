// Variants around atlas's own git: the template's git step runs the user's hooks in the sandbox
// when the task is sandboxed (a hook that runs a script of the tree reaches nothing), and atlas's
// bookkeeping git runs no hook, fsmonitor or filter, pins its git folders and refuses a changed
// layout.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AtlasError } from '../../src/domain/errors.js';
import { gitLayout } from '../../src/git/layout.js';
import { runGit } from '../../src/git/run-git.js';
import { readGitState } from '../../src/git/state.js';
import { git, makeGitRepo, tempDir } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import { COMMIT_STEP, commandStep, onlyTask, prepareAttack, startSandboxed, stolen, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)("the template's git step", { timeout: 120_000 }, () => {
  it("runs the user's pre-commit hook, which calls a script of the tree, inside the sandbox", async () => {
    const attack = prepareAttack({ files: { 'scripts/lint.sh': '#!/bin/sh\nexit 0\n' } });
    const hook = join(attack.repo, '.git', 'hooks', 'pre-commit');
    writeFileSync(hook, '#!/bin/sh\n./scripts/lint.sh && echo HOOK-RAN >> "$TMPDIR/hook-log"\n');
    chmodSync(hook, 0o755);
    // The step swaps the linter the hook runs for the payload.
    writeTemplate(attack, commandStep('swap', `cp ${attack.payload} scripts/lint.sh && echo work > work.txt`) + COMMIT_STEP);
    const result = await startSandboxed(attack);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const { worktree } = onlyTask(attack.home);
    expect(git(worktree, 'log', '-1', '--format=%s')).toBe('step work');
    expect(stolen(attack)).toBe(false);
  });
});

describe("atlas's bookkeeping git", () => {
  function evilRepo(marker: string): string {
    const repo = makeGitRepo();
    git(repo, 'config', 'core.hooksPath', join(repo, 'evil-hooks'));
    mkdirSync(join(repo, 'evil-hooks'));
    for (const name of ['pre-commit', 'post-commit', 'post-index-change', 'reference-transaction']) {
      writeFileSync(join(repo, 'evil-hooks', name), `#!/bin/sh\ntouch ${marker}\n`);
      chmodSync(join(repo, 'evil-hooks', name), 0o755);
    }
    git(repo, 'config', 'core.fsmonitor', `touch ${marker}; false`);
    return repo;
  }

  it("runs no hook and no fsmonitor, whatever the repository's config names", async () => {
    const marker = join(tempDir('atlas-sec-'), 'ran');
    const repo = evilRepo(marker);
    writeFileSync(join(repo, 'f.txt'), 'x\n');
    await readGitState(repo);
    await runGit(repo, ['add', '-A']);
    await runGit(repo, ['-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-q', '-m', 'bookkeeping']);
    await runGit(repo, ['diff', 'HEAD~1']);
    const { existsSync } = await import('node:fs');
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a planted commondir or a .git file naming a folder of its own', async () => {
    const repo = makeGitRepo();
    writeFileSync(join(repo, '.git', 'commondir'), tempDir('atlas-sec-'));
    await expect(runGit(repo, ['status'])).rejects.toBeInstanceOf(AtlasError);
    await expect(readGitState(repo)).rejects.toThrow(/git layout of .* changed/);
    const other = makeGitRepo();
    const tree = tempDir('atlas-sec-tree-');
    writeFileSync(join(tree, '.git'), `gitdir: ${join(other, '.git')}\n`);
    expect(() => gitLayout(tree)).toThrow(/neither a linked worktree's nor a submodule's git folder/);
  });

  it('git init inside a repository makes a new one there (the pin is not applied)', async () => {
    const repo = makeGitRepo();
    const inner = join(repo, 'inner');
    mkdirSync(inner);
    await runGit(inner, ['init', '-q']);
    expect(gitLayout(inner)!.gitDir).toBe(join(inner, '.git'));
    expect(gitLayout(repo)!.gitDir).toBe(join(repo, '.git'));
  });

  it('pins a linked worktree to its own git folders', () => {
    const repo = makeGitRepo();
    const tree = join(tempDir('atlas-sec-'), 'tree');
    git(repo, 'worktree', 'add', '-q', '-b', 'task', tree);
    const layout = gitLayout(tree)!;
    expect(layout.common).toBe(join(repo, '.git'));
    expect(layout.gitDir).toBe(join(repo, '.git', 'worktrees', 'tree'));
    expect(gitLayout(tempDir('atlas-sec-'))).toBeUndefined();
  });
});

// Attack family 5: refs and object stores. A step may move its own branch (its commits), nothing
// else: not the user's main or other branches, tags, remotes' refs, packed-refs, refs/replace
// (which swaps any object for every later git command) or objects/info/alternates.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import {
  attempts,
  COMMIT_STEP,
  commandStep,
  onlyTask,
  prepareAttack,
  startSandboxed,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

function refTries(common: string): Record<string, string> {
  return {
    'other branch': `git commit-tree -m evil "HEAD^{tree}" > "$TMPDIR/c" && cp "$TMPDIR/c" "${common}/refs/heads/other"`,
    'update-ref other': 'git update-ref refs/heads/other "$(git commit-tree -m evil HEAD^{tree})"',
    tag: 'git tag -f v1 "$(git commit-tree -m evil HEAD^{tree})"',
    'packed-refs': `echo "$(git rev-parse HEAD) refs/heads/shadow" >> "${common}/packed-refs"`,
    replace: 'git replace -f "$(git rev-parse other)" "$(git commit-tree -m evil HEAD^{tree})"',
    alternates: `echo "$TMPDIR/objects" > "${common}/objects/info/alternates"`,
    'remote ref': `mkdir -p "${common}/refs/remotes/origin" && git rev-parse HEAD > "${common}/refs/remotes/origin/main"`,
  };
}

describe.skipIf(skipSandbox)('refs and object stores', { timeout: 120_000 }, () => {
  it("a linked worktree: the user's main and every other ref stay put; the task's own branch takes its commit", async () => {
    const attack = prepareAttack();
    git(attack.repo, 'branch', 'other');
    git(attack.repo, 'tag', 'v1');
    const common = join(attack.repo, '.git');
    const tries = attempts({ ...refTries(common), main: 'git update-ref refs/heads/main "$(git commit-tree -m evil HEAD^{tree})"' });
    writeTemplate(attack, commandStep('refs', `echo work > work.txt\n${tries}`) + COMMIT_STEP);
    const before = git(attack.repo, 'for-each-ref', '--format=%(refname) %(objectname)');
    const templateCommit = git(attack.repo, 'rev-parse', 'main');
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(8);
    expect(result.code, result.stderr).toBe(0);
    const after = git(attack.repo, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads/main', 'refs/heads/other', 'refs/tags');
    expect(after.split('\n').every((line) => before.includes(line))).toBe(true);
    expect(git(attack.repo, 'rev-parse', 'main')).toBe(templateCommit);
    expect(git(attack.repo, 'replace', '-l')).toBe('');
    const { worktree } = onlyTask(attack.home);
    expect(git(worktree, 'log', '-1', '--format=%s')).toBe('step work');
  });

  it('in place: the step commits on the checked-out branch, other refs stay put', async () => {
    const attack = prepareAttack();
    git(attack.repo, 'branch', 'other');
    git(attack.repo, 'tag', 'v1');
    const common = join(attack.repo, '.git');
    writeTemplate(attack, commandStep('refs', `echo work > work.txt\n${attempts(refTries(common))}`) + COMMIT_STEP, { inPlace: true });
    const other = git(attack.repo, 'rev-parse', 'other');
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.code, result.stderr).toBe(0);
    expect(git(attack.repo, 'rev-parse', 'other')).toBe(other);
    expect(git(attack.repo, 'replace', '-l')).toBe('');
    expect(readFileSync(join(common, 'objects', 'info', 'alternates'), 'utf8')).toBe('');
    expect(git(attack.repo, 'log', '-1', '--format=%s')).toBe('step work');
  });
});

describe.skipIf(skipSandbox)('a branch only in packed-refs', { timeout: 120_000 }, () => {
  it('cannot be moved by a new loose ref: atlas moves the ref away and stops the task', async () => {
    const attack = prepareAttack();
    git(attack.repo, 'branch', 'other');
    writeTemplate(attack, commandStep('shadow', 'git update-ref refs/heads/other "$(git commit-tree -m evil HEAD^{tree})"'));
    git(attack.repo, 'pack-refs', '--all');
    const other = git(attack.repo, 'rev-parse', 'other');
    const result = await startSandboxed(attack);
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('only in packed-refs');
    expect(git(attack.repo, 'rev-parse', 'other')).toBe(other);
  });
});

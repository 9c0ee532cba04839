// Attack family 1: a step plants `.git/commondir` (or redirects `.git`) so that git, outside the
// sandbox, reads a git folder of the step's own with hooks, fsmonitor and filters that copy the key.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import {
  attempts,
  COMMIT_STEP,
  commandStep,
  onlyTask,
  prepareAttack,
  startSandboxed,
  stolen,
  userGitActivity,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

/** Shell lines making $TMPDIR/evil: a copy of the tree's git folder whose hooks, fsmonitor and a filter run `payload`. */
function evilGitDir(payload: string): string {
  return [
    'cp -r "$(git rev-parse --git-common-dir)" "$TMPDIR/evil"',
    'rm -f "$TMPDIR/evil/commondir"',
    'mkdir -p "$TMPDIR/evil/hooks"',
    `for h in pre-commit post-commit commit-msg; do printf '#!/bin/sh\\n${payload}\\n' > "$TMPDIR/evil/hooks/$h"; chmod +x "$TMPDIR/evil/hooks/$h"; done`,
    `git config -f "$TMPDIR/evil/config" core.fsmonitor '${payload}; false'`,
    `git config -f "$TMPDIR/evil/config" filter.x.clean '${payload}; cat'`,
    `git config -f "$TMPDIR/evil/config" core.sshCommand '${payload}'`,
    'mkdir -p sub && printf "* filter=x\\n" > sub/.gitattributes && echo data > sub/file.txt',
  ].join('\n');
}

describe.skipIf(skipSandbox)('a planted commondir', { timeout: 120_000 }, () => {
  it("in place: atlas moves it away and stops the task; its git, its commit step and the user's git run nothing", async () => {
    const attack = prepareAttack();
    const plant = `${evilGitDir(attack.payload)}\necho "$TMPDIR/evil" > .git/commondir`;
    writeTemplate(attack, commandStep('plant', plant) + COMMIT_STEP, { inPlace: true });
    const result = await startSandboxed(attack);
    expect(result.code, result.stdout + result.stderr).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('git layout changed');
    expect(existsSync(join(attack.repo, '.git', 'commondir'))).toBe(false);
    const { dir } = onlyTask(attack.home);
    expect(existsSync(join(dir, 'refused'))).toBe(true);
    userGitActivity(attack.repo);
    expect(stolen(attack)).toBe(false);
  });

  it('in a linked worktree: commondir, gitdir and the .git pointer are read-only', async () => {
    const attack = prepareAttack();
    const tries = attempts({
      commondir: 'echo "$TMPDIR/evil" > "$(git rev-parse --git-dir)/commondir"',
      gitdir: 'echo /tmp/x > "$(git rev-parse --git-dir)/gitdir"',
      pointer: 'echo "gitdir: $TMPDIR/evil" > .git',
    });
    writeTemplate(attack, commandStep('plant', `${evilGitDir(attack.payload)}\n${tries}`) + COMMIT_STEP);
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(3);
    // The nested .gitattributes the commit brings in waits for a person's review (control-paths.test.ts).
    expect(result.stdout + result.stderr).toContain('sub/.gitattributes (control-path)');
    expect(result.code, result.stderr).toBe(5);
    const { worktree } = onlyTask(attack.home);
    expect(readFileSync(join(worktree, '.git'), 'utf8')).toMatch(/^gitdir: /);
    userGitActivity(worktree);
    expect(stolen(attack)).toBe(false);
  });

  it("in place: .git cannot be swapped for a file naming the step's git folder", async () => {
    const attack = prepareAttack();
    const swap = `${evilGitDir(attack.payload)}\nmv .git .git-moved 2>/dev/null && printf "gitdir: $TMPDIR/evil\\n" > .git; true`;
    writeTemplate(attack, commandStep('swap', swap) + COMMIT_STEP, { inPlace: true });
    await startSandboxed(attack);
    userGitActivity(attack.repo);
    expect(stolen(attack)).toBe(false);
    expect(existsSync(join(attack.repo, '.git', 'HEAD'))).toBe(true);
  });
});

// Attack family 2: git configuration a step writes for git outside the sandbox to obey:
// config.worktree (extensions.worktreeConfig, set by `git sparse-checkout init`), the repository's
// config (core.hooksPath, core.fsmonitor, core.sshCommand, include.path, filters), hooks/.
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
  stolen,
  userGitActivity,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

/** Each way of making git run `payload` through configuration in `file`. */
function configTries(file: string, payload: string): Record<string, string> {
  return {
    [`${file} hooksPath`]: `git config -f "${file}" core.hooksPath "$TMPDIR/hooks"`,
    [`${file} fsmonitor`]: `git config -f "${file}" core.fsmonitor '${payload}; false'`,
    [`${file} sshCommand`]: `git config -f "${file}" core.sshCommand '${payload}'`,
    [`${file} include`]: `git config -f "${file}" include.path "$TMPDIR/evil.config"`,
    [`${file} filter`]: `git config -f "${file}" filter.x.clean '${payload}; cat'`,
  };
}

function hooksAndIncludes(payload: string): string {
  return [
    'mkdir -p "$TMPDIR/hooks"',
    `for h in pre-commit post-commit commit-msg post-checkout; do printf '#!/bin/sh\\n${payload}\\n' > "$TMPDIR/hooks/$h"; chmod +x "$TMPDIR/hooks/$h"; done`,
    `printf '[core]\\n\\tfsmonitor = ${payload}; false\\n' > "$TMPDIR/evil.config"`,
  ].join('\n');
}

describe.skipIf(skipSandbox)('git configuration written by a step', { timeout: 120_000 }, () => {
  it('a linked worktree with extensions.worktreeConfig: config.worktree cannot be created; the commit runs no planted hook', async () => {
    const attack = prepareAttack();
    git(attack.repo, 'config', 'extensions.worktreeConfig', 'true');
    const common = join(attack.repo, '.git');
    const tries = attempts({
      ...configTries('$(git rev-parse --git-dir)/config.worktree', attack.payload),
      'common config': `git config -f "${common}/config" core.hooksPath "$TMPDIR/hooks"`,
      'common config.worktree': `git config -f "${common}/config.worktree" core.hooksPath "$TMPDIR/hooks"`,
      'common hooks': `cp "$TMPDIR/hooks/pre-commit" "${common}/hooks/pre-commit"`,
    });
    writeTemplate(attack, commandStep('plant', `${hooksAndIncludes(attack.payload)}\necho work > work.txt\n${tries}`) + COMMIT_STEP);
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(8);
    expect(result.code, result.stderr).toBe(0);
    const { worktree } = onlyTask(attack.home);
    expect(git(worktree, 'log', '-1', '--format=%s')).toBe('step work');
    userGitActivity(worktree);
    git(worktree, 'commit', '-q', '--allow-empty', '-m', 'the user commits');
    expect(stolen(attack)).toBe(false);
  });

  it("in place: the repository's config, config.worktree, hooks/ and info/ are read-only, existing or not", async () => {
    const attack = prepareAttack();
    const before = readFileSync(join(attack.repo, '.git', 'config'), 'utf8');
    const tries = attempts({
      ...configTries('.git/config', attack.payload),
      ...configTries('.git/config.worktree', attack.payload),
      'hooks/pre-commit': 'cp "$TMPDIR/hooks/pre-commit" .git/hooks/pre-commit',
      'info/attributes': 'mkdir -p .git/info && printf "* filter=x diff=x\\n" > .git/info/attributes',
      'symlinked hooks': 'rm -rf .git/hooks && ln -s "$TMPDIR/hooks" .git/hooks',
    });
    writeTemplate(attack, commandStep('plant', `${hooksAndIncludes(attack.payload)}\necho work > work.txt\n${tries}`) + COMMIT_STEP, {
      inPlace: true,
    });
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    expect(result.stdout.match(/\| REFUSED/g)).toHaveLength(13);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(attack.repo, '.git', 'config'), 'utf8')).toBe(before);
    userGitActivity(attack.repo);
    git(attack.repo, 'commit', '-q', '--allow-empty', '-m', 'the user commits');
    expect(stolen(attack)).toBe(false);
  });

  it("a core.hooksPath inside the tree (husky's .husky) is read-only to the step", async () => {
    const attack = prepareAttack({ files: { '.husky/pre-commit': '#!/bin/sh\nexit 0\n' } });
    git(attack.repo, 'config', 'core.hooksPath', '.husky');
    const tries = attempts({
      'husky hook': `printf '#!/bin/sh\\n${attack.payload}\\n' > .husky/pre-commit`,
      'new husky hook': `printf '#!/bin/sh\\n${attack.payload}\\n' > .husky/post-commit`,
    });
    writeTemplate(attack, commandStep('plant', tries) + COMMIT_STEP, { inPlace: true });
    const result = await startSandboxed(attack);
    expect(result.stdout).not.toMatch(/\| WROTE/);
    git(attack.repo, 'commit', '-q', '--allow-empty', '-m', 'the user commits');
    expect(stolen(attack)).toBe(false);
  });
});

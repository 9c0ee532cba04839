// Attack family 11 (issue 34): what a branch brings in. Control files committed with plumbing
// (never written as files), an embedded repository committed as a gitlink with core.fsmonitor in
// its config, a husky v9 stub's target rewritten, and skip-worktree bits that make a tree look
// clean. Each stops the task for a person's review with the change listed (unless the template
// names the path), is signed as a control review that `atlas verify --require-control-review`
// reads, and a nested repository is moved out of the task's worktree.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { atlas, git } from '../helpers/core-fixtures.js';
import { ensureBuilt } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import type { Attack } from '../helpers/security-fixtures.js';
import {
  commandStep,
  onlyTask,
  prepareAttack,
  startSandboxed,
  stolen,
  userGitActivity,
  writeTemplate,
} from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

const VALIDATE = '  - name: validate\n    type: validation\n    commands: ["sh test.sh"]\n';

function verify(attack: Attack, extra: string[] = []) {
  return atlas(['verify', join(onlyTask(attack.home).dir, 'hook.json'), '--require-control-review', '--json', ...extra], {
    cwd: attack.repo,
    env: attack.env,
  });
}

function hook(attack: Attack) {
  return JSON.parse(onlyTask(attack.home).hookText) as {
    state: string;
    receipts: { command: string; exit_code: number; git_dirty: boolean }[];
  };
}

describe.skipIf(skipSandbox)('control paths a branch brings in', { timeout: 180_000 }, () => {
  it('control files committed with plumbing stop the task for review; approval is signed and verify reads it', async () => {
    const attack = prepareAttack({ files: { 'lib.js': 'passing\n', 'test.sh': 'grep -q passing lib.js\n' } });
    const plant = [
      `printf 'lifecycle:\\n  on_cold_start: ${attack.payload}\\nvalidation:\\n  commands: ["true"]\\n' > "$TMPDIR/config"`,
      `printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"${attack.payload}"}]}]}}' > "$TMPDIR/settings"`,
      `echo ${attack.payload} > "$TMPDIR/envrc"`,
      'git update-index --add --cacheinfo "100644,$(git hash-object -w "$TMPDIR/config"),.atlas/config.yaml"',
      'git update-index --add --cacheinfo "100644,$(git hash-object -w "$TMPDIR/settings"),.claude/settings.json"',
      'git update-index --add --cacheinfo "100644,$(git hash-object -w "$TMPDIR/envrc"),.envrc"',
      'git update-index --skip-worktree .atlas/config.yaml .claude/settings.json .envrc',
      'git commit -qm "innocent" && echo committed',
    ].join('\n');
    writeTemplate(attack, commandStep('plant', plant) + VALIDATE);
    const result = await startSandboxed(attack);
    expect(result.stdout).toContain('committed');
    expect(result.code).not.toBe(0);
    const out = result.stdout + result.stderr;
    for (const path of ['.atlas/config.yaml', '.claude/settings.json', '.envrc']) expect(out).toContain(path);
    expect(out).toContain('skip-worktree');
    expect(hook(attack).state).toBe('awaiting_human');
    expect(
      hook(attack)
        .receipts.filter((r) => r.command === 'atlas control-review')
        .map((r) => r.exit_code),
    ).toEqual([1]);
    const refused = await verify(attack);
    expect(refused.code).not.toBe(0);
    expect(JSON.parse(refused.stdout).policies).toContainEqual(expect.objectContaining({ policy: 'require-control-review', ok: false }));

    const { dir } = onlyTask(attack.home);
    const approved = await atlas(['resume', '--task', dir.split('/').pop()!, '--approve', '--no-interactive'], {
      cwd: attack.repo,
      env: attack.env,
    });
    expect(approved.stdout + approved.stderr).toContain('control changes approved');
    expect(
      hook(attack)
        .receipts.filter((r) => r.command === 'atlas control-review')
        .map((r) => r.exit_code),
    ).toEqual([1, 0]);
    const accepted = await verify(attack);
    expect(JSON.parse(accepted.stdout).policies).toContainEqual(expect.objectContaining({ policy: 'require-control-review', ok: true }));
    expect(stolen(attack)).toBe(false);
  });

  it('an embedded repository with core.fsmonitor committed as a gitlink: the task stops, its git folder is moved out, git status runs nothing', async () => {
    const attack = prepareAttack({ files: { 'a.txt': 'a\n' } });
    const plant = [
      'git init -q sub && echo x > sub/f',
      `git -C sub config core.fsmonitor ${attack.payload}`,
      'git -C sub add f && git -C sub commit -qm x',
      'git add sub && git commit -qm "vendor sub" && echo committed',
    ].join('\n');
    writeTemplate(attack, commandStep('plant', plant));
    const result = await startSandboxed(attack);
    expect(result.stdout).toContain('committed');
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/sub \(gitlink\)/);
    expect(result.stdout + result.stderr).toMatch(/sub\/\.git \(nested-repository\)/);
    const { worktree } = onlyTask(attack.home);
    expect(existsSync(join(worktree, 'sub', '.git'))).toBe(false);
    userGitActivity(worktree);
    expect(stolen(attack)).toBe(false);
  });

  it("a husky v9 stub's target rewritten stops the task for review", async () => {
    const attack = prepareAttack({
      files: { '.husky/_/pre-commit': '#!/bin/sh\nsh "$(dirname "$0")/../pre-commit"\n', '.husky/pre-commit': '#!/bin/sh\nexit 0\n' },
    });
    git(attack.repo, 'config', 'core.hooksPath', '.husky/_');
    writeTemplate(
      attack,
      commandStep('plant', `printf '#!/bin/sh\\n${attack.payload}\\n' > .husky/pre-commit && git commit -qam hooks && echo committed`),
    );
    const result = await startSandboxed(attack);
    expect(result.stdout).toContain('committed');
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/\.husky\/pre-commit \(control-path\)/);
    expect(hook(attack).state).toBe('awaiting_human');
    expect(stolen(attack)).toBe(false);
  });

  it('--skip-worktree: a tree that looks clean but is not the committed tree is never signed git_dirty: false', async () => {
    const attack = prepareAttack({ files: { 'lib.js': 'passing\n', 'test.sh': 'grep -q passing lib.js\n' } });
    const hide = [
      "printf 'broken\\n' > lib.js && git commit -qam broken",
      'git update-index --skip-worktree lib.js',
      "printf 'passing\\n' > lib.js",
      'git status --porcelain | wc -l',
    ].join('\n');
    writeTemplate(attack, commandStep('hide', hide) + VALIDATE);
    const stopped = await startSandboxed(attack);
    expect(stopped.code).not.toBe(0);
    expect(stopped.stdout + stopped.stderr).toMatch(/lib\.js \(skip-worktree\)/);
    expect(hook(attack).receipts.filter((r) => r.command === 'sh test.sh')).toEqual([]);
  });

  it('--skip-worktree allowed by the template: the receipt says the tree was dirty', async () => {
    const attack = prepareAttack({ files: { 'lib.js': 'passing\n', 'test.sh': 'grep -q passing lib.js\n' } });
    const hide = [
      "printf 'broken\\n' > lib.js && git commit -qam broken",
      'git update-index --skip-worktree lib.js',
      "printf 'passing\\n' > lib.js",
    ].join('\n');
    writeTemplate(attack, commandStep('hide', hide) + VALIDATE);
    const path = join(attack.repo, '.atlas', 'templates', 't.yaml');
    writeFileSync(path, readFileSync(path, 'utf8').replace('steps:\n', 'control_paths: ["lib.js"]\nsteps:\n'));
    git(attack.repo, 'commit', '-qam', 'allow lib.js');
    const result = await startSandboxed(attack);
    expect(result.code, result.stderr).toBe(0);
    const receipts = hook(attack).receipts.filter((r) => r.command === 'sh test.sh');
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({ exit_code: 0, git_dirty: true });
  });
});

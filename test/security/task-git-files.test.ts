// Attack family 10 (issue 34): the worktree's own git files and the refs beside its branch. A step
// that points its worktree's HEAD at refs/heads/main would have recovery's reset move main; one
// that creates refs/heads/origin/main shadows origin/main, and refs/heads/main.lock breaks every
// later commit on main. HEAD is read-only in the sandbox and checked before atlas runs git on the
// task; new refs outside the task's branch are moved away after the command and the task stops.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { atlas, git } from '../helpers/core-fixtures.js';
import type { Sandbox } from '../helpers/engine-fixtures.js';
import { ensureBuilt, finished, startAtlas, waitFor } from '../helpers/engine-fixtures.js';
import { skipSandbox } from '../helpers/sandbox-fixtures.js';
import { attempts, commandStep, onlyTask, prepareAttack, startSandboxed, writeTemplate } from '../helpers/security-fixtures.js';

beforeAll(() => ensureBuilt());

describe.skipIf(skipSandbox)("the worktree's HEAD", { timeout: 180_000 }, () => {
  it('a step cannot point HEAD at main, and recovery after a crash does not move main', async () => {
    const attack = prepareAttack({ files: { 'a.txt': 'a\n' } });
    const tries = attempts({
      'HEAD file': 'printf "ref: refs/heads/main\\n" > "$(git rev-parse --git-dir)/HEAD"',
      'symbolic-ref': 'git symbolic-ref HEAD refs/heads/main',
    });
    // The first run commits, tries HEAD, then waits to be killed; the run recovery starts (after it
    // saved the work on an atlas/recovery/ branch) ends at once.
    const step = `if git for-each-ref refs/heads/atlas/recovery | grep -q .; then exit 0; fi\necho agent > agent.txt && git add agent.txt && git commit -qm agent\n${tries}\ntouch killme.flag\nsleep 120`;
    writeTemplate(attack, commandStep('first', 'echo ok') + commandStep('agent', step));
    const main = git(attack.repo, 'rev-parse', 'main');
    const child = startAtlas({ repo: attack.repo, env: { ...process.env, ...attack.env } } as Sandbox, [
      'start',
      't',
      'red team',
      '--no-interactive',
      '--sandbox',
    ]);
    const output = finished(child);
    await waitFor(
      () => {
        try {
          return existsSync(join(onlyTask(attack.home).worktree, 'killme.flag'));
        } catch {
          return false; // the task is not written yet
        }
      },
      60_000,
      'the step to try HEAD',
    );
    child.kill('SIGKILL');
    const first = await output;
    expect(first.stdout).not.toMatch(/\| WROTE/);
    expect(first.stdout.match(/\| REFUSED/g)).toHaveLength(2);
    const { dir, worktree } = onlyTask(attack.home);
    const recovered = await atlas(['recover', '--task', dir.split('/').pop()!, '--action', 'retry_from_checkpoint'], {
      cwd: attack.repo,
      env: attack.env,
    });
    expect(recovered.stdout + recovered.stderr).toContain('Reset ');
    expect(git(attack.repo, 'rev-parse', 'main')).toBe(main);
    expect(git(worktree, 'symbolic-ref', 'HEAD')).toMatch(/^refs\/heads\/atlas\//);
  });

  it('a HEAD that names another branch stops recovery before any git runs', async () => {
    const attack = prepareAttack({ files: { 'a.txt': 'a\n' } });
    writeTemplate(attack, commandStep('agent', 'echo agent > agent.txt\nexit 1').replace('    run:', '    on_failure: ask\n    run:'));
    const main = git(attack.repo, 'rev-parse', 'main');
    await startSandboxed(attack);
    const { dir, worktree } = onlyTask(attack.home);
    const gitDir = git(worktree, 'rev-parse', '--absolute-git-dir');
    writeFileSync(join(gitDir, 'HEAD'), 'ref: refs/heads/main\n');
    const recovered = await atlas(['recover', '--task', dir.split('/').pop()!, '--action', 'retry_from_checkpoint'], {
      cwd: attack.repo,
      env: attack.env,
    });
    expect(recovered.code).not.toBe(0);
    expect(recovered.stdout + recovered.stderr).toContain('no longer names its branch');
    expect(git(attack.repo, 'rev-parse', 'main')).toBe(main);
  });
});

describe.skipIf(skipSandbox)("refs outside the task's branch", { timeout: 180_000 }, () => {
  it('refs/heads/origin/main and refs/heads/main.lock do not stay: the task stops and main still takes commits', async () => {
    const attack = prepareAttack({ files: { 'a.txt': 'a\n' } });
    const common = join(attack.repo, '.git');
    const step = ['git update-ref refs/heads/origin/main HEAD', `: > "${common}/refs/heads/main.lock"`, 'echo planted'].join('\n');
    writeTemplate(attack, commandStep('plant', step));
    const result = await startSandboxed(attack);
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('refs outside its branch');
    expect(existsSync(join(common, 'refs', 'heads', 'origin', 'main'))).toBe(false);
    expect(existsSync(join(common, 'refs', 'heads', 'main.lock'))).toBe(false);
    writeFileSync(join(attack.repo, 'b.txt'), 'b\n');
    git(attack.repo, 'add', 'b.txt');
    git(attack.repo, 'commit', '-q', '-m', 'still works');
  });
});

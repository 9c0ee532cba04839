// The built-in templates' receipts verify on the commit they produce (issue 35): bugfix and
// feature commit, then validate, so `atlas verify --commit HEAD --require-step validate
// --require-pass` passes on the task's own commit; so does check on the checkout it validated.
// Then docs/ci.md's flow end to end: export the bundle, commit it, verify with the xpub alone.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AtlasResult, Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, git, onlyTask } from './helpers/engine-fixtures.js';
import { installAgent, npmRepo } from './helpers/everyday-fixtures.js';

let sb: Sandbox | undefined;
beforeAll(() => ensureBuilt());
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

const VERIFY = ['verify', '--commit', 'HEAD', '--require-step', 'validate', '--require-pass'];

function ok(result: AtlasResult, what: string): AtlasResult {
  expect(result.code, `${what}: ${result.stdout}${result.stderr}`).toBe(0);
  return result;
}

describe('receipts of the built-in templates verify on the commit they produce', () => {
  it('bugfix: verify --commit HEAD passes in the task worktree, and the CI flow of docs/ci.md passes', async () => {
    const s = (sb = npmRepo());
    const agent = installAgent(s);
    ok(await atlas(s, ['start', 'bugfix', 'fix the parser', '--local', ...agent]), 'start bugfix');
    const { task, hook } = onlyTask(s);
    const head = git(task.worktree, 'rev-parse', 'HEAD');
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('fix: fix the parser');
    expect(hook.receipts.length).toBeGreaterThan(0);
    for (const r of hook.receipts) expect(r).toMatchObject({ git_commit: head, git_dirty: false });
    ok(await atlas(s, VERIFY, { cwd: task.worktree }), 'verify');

    // docs/ci.md: export the bundle in the task's tree, commit it, verify with the xpub alone.
    const xpub = ok(await atlas(s, ['key', 'export']), 'key export').stdout.trim();
    mkdirSync(join(task.worktree, '.atlas'), { recursive: true });
    ok(await atlas(s, ['receipts', 'export', '--out', '.atlas/receipts.json'], { cwd: task.worktree }), 'receipts export');
    git(task.worktree, 'add', '.atlas/receipts.json');
    git(task.worktree, 'commit', '-q', '-m', 'atlas receipts');
    const ci = await atlas(
      s,
      ['verify', '.atlas/receipts.json', '--xpub', xpub, '--require-step', 'validate', '--commit', 'HEAD', '--require-pass'],
      {
        cwd: task.worktree,
        env: { ATLAS_HOME: join(s.base, 'ci-home') },
      },
    );
    ok(ci, 'verify in CI');
  });

  it('feature: approved, committed, then validated: verify --commit HEAD passes', async () => {
    const s = (sb = npmRepo());
    const agent = installAgent(s);
    const waiting = await atlas(s, ['start', 'feature', 'add a flag', '--local', '--no-interactive', ...agent]);
    expect(waiting.code, waiting.stdout + waiting.stderr).toBe(5);
    const { id } = onlyTask(s);
    ok(await atlas(s, ['resume', '--task', id, '--approve', '--no-interactive']), 'resume --approve');
    const { task } = onlyTask(s);
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('feat: add a flag');
    ok(await atlas(s, VERIFY, { cwd: task.worktree }), 'verify');
  });

  it('check: verify --commit HEAD passes on the checkout it validated', async () => {
    const s = (sb = npmRepo());
    ok(await atlas(s, ['start', 'check', '--local']), 'start check');
    expect(existsSync(join(s.repo, '.git'))).toBe(true);
    ok(await atlas(s, VERIFY, { cwd: s.repo }), 'verify');
  });
});

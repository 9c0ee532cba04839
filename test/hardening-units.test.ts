// In-process checks of issue 8's rules and edges that the CLI tests reach only in child processes:
// tightening ATLAS_HOME, the repository's committed policy, hook/task mismatches.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AtlasError } from '../src/domain/errors.js';
import { hookTaskMismatch } from '../src/domain/hook-task-check.js';
import { tightenHome } from '../src/engine/private-home.js';
import { repoRequiredCommands } from '../src/receipts/repo-policy.js';
import { seedExampleHook } from './helpers/core-fixtures.js';
import { cleanupRecoveryFixtures, commitAll, git, makeRepo } from './helpers/recovery-fixtures.js';

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
  cleanupRecoveryFixtures();
});
const mode = (p: string) => lstatSync(p).mode & 0o777;

describe('tightenHome', () => {
  it("closes every folder and file atlas keeps, not the worktree's contents, never following links", () => {
    const home = mkdtempSync(join(tmpdir(), 'atlas-tighten-'));
    made.push(home);
    const outside = mkdtempSync(join(tmpdir(), 'atlas-outside-'));
    made.push(outside);
    writeFileSync(join(outside, 'target.txt'), 'x');
    chmodSync(outside, 0o755);
    chmodSync(join(outside, 'target.txt'), 0o644);
    const task = join(home, 'workspaces', 'ws', 'tasks', 'task-20260117-143022');
    const tree = join(home, 'workspaces', 'ws', 'worktree');
    mkdirSync(join(task, 'artifacts'), { recursive: true });
    mkdirSync(join(tree, 'src'), { recursive: true });
    writeFileSync(join(task, 'hook.json'), '{}');
    writeFileSync(join(tree, 'src', 'app.ts'), 'x');
    writeFileSync(join(tree, 'run.sh'), '#!/bin/sh\n');
    symlinkSync(outside, join(task, 'link'));
    for (const p of [
      home,
      join(home, 'workspaces'),
      join(home, 'workspaces', 'ws'),
      join(home, 'workspaces', 'ws', 'tasks'),
      task,
      join(task, 'artifacts'),
      tree,
      join(tree, 'src'),
    ])
      chmodSync(p, 0o755);
    chmodSync(join(task, 'hook.json'), 0o644);
    chmodSync(join(tree, 'src', 'app.ts'), 0o644);
    chmodSync(join(tree, 'run.sh'), 0o755);

    const result = tightenHome(home);
    expect(result.failed).toEqual([]);
    expect(mode(home)).toBe(0o700);
    expect(mode(task)).toBe(0o700);
    expect(mode(join(task, 'hook.json'))).toBe(0o600);
    expect(mode(tree)).toBe(0o700); // the worktree folder itself closes it to others
    expect(mode(join(tree, 'src', 'app.ts'))).toBe(0o644); // the repository's files keep their modes
    expect(mode(join(tree, 'run.sh'))).toBe(0o755);
    expect(mode(outside)).toBe(0o755); // a link is never followed
    expect(mode(join(outside, 'target.txt'))).toBe(0o644);
    expect(result.changed).toContain(join(task, 'hook.json'));
    expect(tightenHome(home).changed).toEqual([]);
  });

  it('a home that does not exist is reported, not thrown', () => {
    const result = tightenHome(join(tmpdir(), 'atlas-no-such-home-xyz'));
    expect(result.changed).toEqual([]);
    expect(result.failed[0]?.error).toBe('ENOENT');
  });
});

describe('repoRequiredCommands', () => {
  const commit = (repo: string, config: string | undefined) => {
    if (config !== undefined) {
      mkdirSync(join(repo, '.atlas'), { recursive: true });
      writeFileSync(join(repo, '.atlas', 'config.yaml'), config);
    }
    return commitAll(repo, 'config');
  };

  it('reads validation.commands as committed on the commit, not as in the working tree', async () => {
    const repo = makeRepo();
    const at = commit(repo, 'validation:\n  commands: ["npm test", "  ", "make lint"]\n');
    writeFileSync(join(repo, '.atlas', 'config.yaml'), 'validation:\n  commands: ["true"]\n');
    expect(await repoRequiredCommands(repo, at)).toEqual([
      { command: 'npm test', source: `.atlas/config.yaml at ${at.slice(0, 12)}` },
      { command: 'make lint', source: `.atlas/config.yaml at ${at.slice(0, 12)}` },
    ]);
  });

  it('no file, no key or no repository: no policy', async () => {
    const repo = makeRepo();
    expect(await repoRequiredCommands(repo, git(repo, 'rev-parse', 'HEAD'))).toEqual([]);
    expect(await repoRequiredCommands(repo, commit(repo, 'hooks:\n  max_checkpoints: 5\n'))).toEqual([]);
    expect(await repoRequiredCommands(repo, commit(repo, 'validation:\n  timeout: 5m\n'))).toEqual([]);
    expect(await repoRequiredCommands(repo, commit(repo, '- a list\n'))).toEqual([]);
    expect(await repoRequiredCommands(tmpdir(), 'a'.repeat(40))).toEqual([]);
  });

  it('a committed file that does not parse, or commands of the wrong type: exit 2 with --no-repo-policy as the way out', async () => {
    for (const text of ['validation: [unclosed\n', 'validation:\n  commands: 42\n']) {
      const repo = makeRepo();
      const at = commit(repo, text);
      const error = await repoRequiredCommands(repo, at).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AtlasError);
      expect((error as AtlasError).exitCode).toBe(2);
      expect((error as AtlasError).hint).toContain('--no-repo-policy');
    }
  });
});

describe('hookTaskMismatch', () => {
  const steps = [{ name: 'analyze' }, { name: 'implement' }, { name: 'validate' }];
  it('names the field for another task, an index out of range, a name that differs; accepts a match', () => {
    const hook = seedExampleHook();
    const id = hook.task_id;
    const at = hook.current_step!;
    expect(hookTaskMismatch(hook, 'task-20990101-000000', steps)?.field).toBe('task_id');
    expect(hookTaskMismatch({ ...hook, current_step: { ...at, step_index: 3 } }, id, steps)).toMatchObject({
      field: 'current_step.step_index',
      problem: 'is 3, but task.json has 3 steps (0..2)',
    });
    expect(
      hookTaskMismatch({ ...hook, current_step: { ...at, step_index: 1, step_name: 'deploy' } }, id, [
        { name: 'only' },
        { name: 'implement' },
      ])?.field,
    ).toBe('current_step.step_name');
    expect(hookTaskMismatch({ ...hook, current_step: { ...at, step_index: 1, step_name: 'implement' } }, id, steps)).toBeUndefined();
    expect(hookTaskMismatch({ ...hook, current_step: undefined } as never, id, steps)).toBeUndefined();
    expect(hookTaskMismatch(hook, id, undefined)).toBeUndefined();
    expect(hookTaskMismatch({ ...hook, current_step: { ...at, step_index: 1 } }, id, [{ name: 'x' }])?.problem).toContain(
      'has 1 step (0..0)',
    );
  });
});

describe('evaluatePolicies: required commands and nothing to verify', () => {
  const receipt = (id: string, command: string, exit: number, completed: string) =>
    ({
      receipt_id: id,
      command,
      exit_code: exit,
      completed_at: completed,
      step_name: 'validate',
      message_version: 3,
      git_dirty: false,
      task_id: 't',
    }) as never;
  const tasks = (...receipts: unknown[]) => [{ taskId: 't', receipts: receipts.map((r) => ({ receipt: r as never, valid: true })) }];

  it('the last run of the exact command must pass; another command never counts', async () => {
    const { evaluatePolicies } = await import('../src/domain/receipt-policy.js');
    const base = { requireSteps: [], requirePass: false };
    const fixed = tasks(
      receipt('rcpt-1', 'npm test', 1, '2026-01-17T14:00:00Z'),
      receipt('rcpt-2', ' npm test ', 0, '2026-01-17T14:05:00Z'),
    );
    const ok = evaluatePolicies(fixed, { ...base, requireCommands: [{ command: 'npm test', source: '--require-command' }] });
    expect(ok).toEqual([
      {
        policy: 'require-command',
        name: '--require-command "npm test"',
        ok: true,
        detail: '`npm test` passed (rcpt-2, the last of 2 runs)',
      },
    ]);
    const broke = tasks(receipt('rcpt-1', 'npm test', 0, '2026-01-17T14:00:00Z'), receipt('rcpt-2', 'npm test', 2, '2026-01-17T14:05:00Z'));
    expect(
      evaluatePolicies(broke, { ...base, requireCommands: [{ command: 'npm test', source: '.atlas/config.yaml at abc' }] })[0],
    ).toMatchObject({
      name: '"npm test" (.atlas/config.yaml at abc)',
      ok: false,
      detail: 'the last run of `npm test` exited 2 (rcpt-2)',
    });
    const others = tasks(...['a', 'b', 'c', 'd', 'e'].map((c, i) => receipt(`rcpt-${i}`, c, 0, '2026-01-17T14:00:00Z')));
    expect(evaluatePolicies(others, { ...base, requireCommands: [{ command: 'npm test', source: '--require-command' }] })[0]!.detail).toBe(
      'no valid receipt of `npm test`; receipts are for `a`, `b`, `c`, `d`, …',
    );
  });

  it('no receipts fail as nothing to verify unless allowed', async () => {
    const { evaluatePolicies } = await import('../src/domain/receipt-policy.js');
    const base = { requireSteps: [], requirePass: false };
    expect(evaluatePolicies([], base)).toEqual([
      { policy: 'receipts', name: 'receipts to verify', ok: false, detail: 'nothing to verify: no tasks (--allow-empty accepts this)' },
    ]);
    expect(evaluatePolicies(tasks(), base)[0]!.detail).toBe('nothing to verify: 1 task without receipts (--allow-empty accepts this)');
    expect(evaluatePolicies(tasks(), { ...base, allowEmpty: true })).toEqual([]);
  });
});

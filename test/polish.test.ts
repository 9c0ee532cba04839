// What users see at the edges: errors in JSON, hooks state on init, approval prompts without a
// terminal, template mistakes, recovery advice that has expired, receipt hints, CI key folders,
// help text. Every check runs the built CLI (`npm run build` first) with a temp ATLAS_HOME.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RecoveryContext } from '../src/domain/recovery-context.js';
import { atlasSync, createFixtureTask, git, makeGitRepo, tempDir } from './helpers/core-fixtures.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sandbox(files?: Record<string, string>) {
  const home = tempDir('atlas-home-');
  const repo = makeGitRepo(files);
  dirs.push(home, repo);
  const env = { ATLAS_HOME: home, ATLAS_AGENT: 'command' };
  const cli = (args: string[], cwd = repo) => atlasSync(args, { cwd, env });
  return { home, repo, env, cli };
}

/** A repository whose .atlas/templates holds these templates (committed, so worktrees see them). */
function withTemplates(templates: Record<string, string>) {
  const files: Record<string, string> = { 'README.md': '# demo\n' };
  const sb = sandbox(files);
  mkdirSync(join(sb.repo, '.atlas', 'templates'), { recursive: true });
  for (const [name, text] of Object.entries(templates)) writeFileSync(join(sb.repo, '.atlas', 'templates', name), text);
  git(sb.repo, 'add', '-A');
  git(sb.repo, 'commit', '-q', '-m', 'templates');
  return sb;
}

describe('atlas checkpoint without a task', () => {
  it('prints the usual error document under --json, message and hint on stderr in text, nothing under --quiet', () => {
    const { cli } = sandbox();
    const json = cli(['--json', 'checkpoint', 'x']);
    expect(json.code).toBe(4);
    const doc = JSON.parse(json.stdout) as { error: { message: string; hint: string; exit_code: number } };
    expect(doc.error.exit_code).toBe(4);
    expect(doc.error.message).toContain('no running atlas task owns this directory');
    expect(doc.error.hint).toContain('--task ID');

    const text = cli(['checkpoint', 'x']);
    expect(text.code).toBe(4);
    expect(text.stdout).toBe('');
    expect(text.stderr).toContain('atlas: no running atlas task owns this directory or branch; nothing recorded');
    expect(text.stderr).toContain('hint: pass --task ID');

    const quiet = cli(['checkpoint', 'x', '--quiet']);
    expect(quiet).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});

describe('atlas init and git hooks', () => {
  it('reports hooks that are already installed, in text and JSON, without installing anything', () => {
    const { cli } = sandbox();
    const before = cli(['init', '--no-hooks']);
    expect(before.code).toBe(0);
    expect(before.stdout).toContain('git hooks not installed');

    expect(cli(['hook', 'install']).code).toBe(0);
    const after = cli(['init', '--no-hooks']);
    expect(after.stdout).toMatch(/git hooks installed in \S+ \(post-commit, pre-push\)/);
    expect(after.stdout).not.toContain('not installed');

    const json = JSON.parse(cli(['--json', 'init']).stdout) as {
      git_hooks: unknown;
      git_hooks_status: { hooks: { name: string; installed: boolean; current: boolean }[] };
    };
    expect(json.git_hooks).toBeNull();
    expect(json.git_hooks_status.hooks.map((h) => [h.name, h.installed, h.current])).toEqual([
      ['post-commit', true, true],
      ['pre-push', true, true],
    ]);
  });
});

describe('a human step without a terminal', () => {
  it('shows what the person is asked and how to answer', () => {
    const { cli } = withTemplates({
      'approve.yaml':
        'worktree: false\nsteps:\n  - name: approve\n    type: human\n    prompt: |\n      Ship {{description}}?\n      Check the changelog first.\n',
    });
    const run = cli(['start', 'approve', 'release 1.2']);
    expect(run.code).toBe(5);
    const out = run.stdout + run.stderr;
    expect(out).toContain('  Ship release 1.2?\n  Check the changelog first.\n');
    expect(out).toMatch(/approve: atlas resume --task task-\S+ --approve/);
    expect(out).toMatch(/reject: +atlas resume --task task-\S+ --reject/);

    const json = cli(['--json', 'start', 'approve', 'release 1.3']);
    const doc = JSON.parse(json.stdout) as { prompt: string; message: string; exit_code: number };
    expect(doc.exit_code).toBe(5);
    expect(doc.prompt).toBe('Ship release 1.3?\nCheck the changelog first.');
    expect(doc.message).toContain('Ship release 1.3?');
  });
});

describe('template mistakes', () => {
  it('names the command YAML read as a mapping and says to quote it', () => {
    const { cli } = withTemplates({
      'build.yaml': 'steps:\n  - name: build\n    type: command\n    run:\n      - "true"\n      - echo version: 1\n',
    });
    const r = cli(['templates', 'show', 'build']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('build.yaml: step 1 "build": field "run": command 2 is a mapping (echo version: 1), not text');
    expect(r.stderr).toMatch(/hint: quote the command/);
  });

  it('refuses a name that differs from the file name, naming both', () => {
    const { cli } = withTemplates({
      'foo.yaml': 'name: other\nworktree: false\nsteps:\n  - name: s\n    type: command\n    run: "true"\n',
    });
    const r = cli(['start', 'foo', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/foo\.yaml: field "name": "other" differs from the file name "foo"/);
    expect(r.stderr).toContain('write name: foo, or leave name out');
    expect(cli(['start', 'other', 'x']).code).toBe(4);
  });

  it('lists only templates that load as available, and names the broken ones apart', () => {
    const { cli } = withTemplates({
      'good.yaml': 'worktree: false\nsteps:\n  - name: s\n    type: command\n    run: "true"\n',
      'broken.yaml': 'steps:\n  - name: s\n    type: ai\n',
    });
    const r = cli(['start', 'nope', 'x']);
    expect(r.code).toBe(4);
    const hint = r.stderr.split('\n').find((l) => l.startsWith('hint: '))!;
    expect(hint).toMatch(/available: [^;]*\bgood\b/);
    expect(hint.split(';')[0]).not.toContain('broken');
    expect(hint).toContain('1 more does not load (broken)');
  });
});

describe('atlas hook status and old recovery advice', () => {
  it('shows recovery advice only while recovery is pending, a short note afterwards', async () => {
    const { home, repo, cli } = sandbox();
    const { ref, manager } = await createFixtureTask({ home, repo });
    const recovery: RecoveryContext = {
      detected_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      crash_type: 'signal',
      last_known_state: 'step_running',
      was_validating: false,
      recommended_action: 'manual',
      reason: 'the step was on its last attempt',
    };
    await manager.transition({ to: 'step_pending', trigger: 'task_start' });
    await manager.transition({ to: 'recovering', trigger: 'crash_detected' }, (h) => ({ ...h, recovery }));
    await manager.transition({ to: 'awaiting_human', trigger: 'manual_recovery_required' });
    const status = () => cli(['hook', 'status', '--task', ref.id]);
    const json = () =>
      (JSON.parse(cli(['--json', 'hook', 'status', '--task', ref.id]).stdout) as { recovery_pending: boolean }).recovery_pending;

    expect(status().stdout).toContain('recovery     signal crash; recommended manual: the step was on its last attempt');
    expect(json()).toBe(true);

    await manager.transition({ to: 'abandoned', trigger: 'task_abandoned' });
    const ended = status().stdout;
    expect(ended).not.toContain('recommended');
    expect(ended).toMatch(/last crash +signal, detected .* ago \(recovery is over\)/);
    expect(json()).toBe(false);
  });
});

describe('receipt ids', () => {
  it('the hint of an unknown receipt points to a command that lists the ids', () => {
    const { cli } = withTemplates({ 'v.yaml': 'worktree: false\nsteps:\n  - name: test\n    type: validation\n    commands: ["true"]\n' });
    const run = cli(['--json', 'start', 'v', 'validate']);
    expect(run.code).toBe(0);
    const taskId = (JSON.parse(run.stdout) as { task_id: string }).task_id;
    const receiptId = (JSON.parse(cli(['hook', 'export', '--task', taskId]).stdout) as { receipts: { receipt_id: string }[] }).receipts[0]!
      .receipt_id;

    const miss = cli(['receipts', 'message', 'rcpt-00000000', '--task', taskId]);
    expect(miss.code).toBe(4);
    const command = /hint: `(atlas verify \S+)`/.exec(miss.stderr)?.[1];
    expect(command).toBe(`atlas verify ${taskId}`);
    const listed = cli(command!.split(' ').slice(1));
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(receiptId);
  });
});

describe('atlas key show on a CI machine', () => {
  it('accepts a readable keys folder holding only account.xpub, refuses a writable one, stays strict with master.key', () => {
    const signer = sandbox();
    expect(signer.cli(['init', '--no-hooks']).code).toBe(0);
    const xpub = signer.cli(['key', 'export']).stdout.trim().split('\n').pop()!.trim();
    expect(xpub).toMatch(/^xpub/);

    const ci = tempDir('atlas-ci-home-');
    dirs.push(ci);
    const keys = join(ci, 'keys');
    mkdirSync(keys);
    chmodSync(keys, 0o755);
    writeFileSync(join(keys, 'account.xpub'), `${xpub}\n`, { mode: 0o644 });
    const show = () => atlasSync(['key', 'show'], { cwd: ci, env: { ATLAS_HOME: ci } });
    const ok = show();
    expect(ok.code).toBe(0);
    expect(ok.stdout).not.toContain('NOT SAFE');
    expect(ok.stdout).toContain(xpub);

    chmodSync(keys, 0o775);
    const writable = show();
    expect(writable.code).toBe(3);
    expect(writable.stdout).toContain('writable by its group');
    expect(writable.stdout).toContain(`chmod go-w ${keys}`);

    // The signing machine: a 0755 folder around master.key is still refused.
    chmodSync(join(signer.home, 'keys'), 0o755);
    const strict = signer.cli(['key', 'show']);
    expect(strict.code).toBe(3);
    expect(strict.stdout).toContain('NOT SAFE');
    expect(strict.stdout).toContain('chmod 700');
  });
});

describe('help text', () => {
  it('hides empty defaults of repeatable options and lists template folders in search order', () => {
    expect(atlasSync(['--help']).stdout).not.toContain('(default: [])');
    expect(atlasSync(['receipts', 'export', '--help']).stdout).not.toContain('(default: [])');
    expect(atlasSync(['verify', '--help']).stdout).not.toContain('(default: [])');
    const help = atlasSync(['templates', '--help']).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('.atlas/templates, templates.dirs, $ATLAS_HOME/templates, built-in');
  });
});

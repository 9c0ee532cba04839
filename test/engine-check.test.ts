// End to end: `atlas start check` in a real git repository, through the built CLI.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, onlyTask, sandbox, transitions, writeFiles } from './helpers/engine-fixtures.js';

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

describe('atlas start check', () => {
  it('validates the checkout with detected package.json scripts and completes with every transition recorded', async () => {
    sb = sandbox({
      'package.json': JSON.stringify({
        name: 'fixture',
        scripts: { lint: 'node -e "console.log(\'lint ok\')"', test: 'node -e "console.log(\'tests ok\')"' },
      }),
    });
    const result = await atlas(sb, ['start', 'check']);
    // The first run sets up ATLAS_HOME and the signing key, and says so on stderr.
    expect(result.stderr).toContain(`atlas: set up ${sb.home} (settings: ${sb.home}/config.yaml)\n`);
    expect(result.stderr).toContain(`atlas: created the signing key ${sb.home}/keys/master.key`);
    expect(result.stderr).not.toMatch(/warning|error/i);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('lint ok');
    expect(result.stdout).toContain('tests ok');
    expect(result.stdout).toMatch(/completed: 1 step done/);

    const { hook, task, dir } = onlyTask(sb);
    expect(hook.state).toBe('completed');
    expect(transitions(hook)).toEqual([
      '∅ → initializing (task_start)',
      'initializing → step_pending (setup_complete)',
      'step_pending → step_running (step_start)',
      'step_running → step_validating (validation_start)',
      'step_validating → step_pending (step_complete)',
      'step_pending → completed (all_steps_complete)',
    ]);
    expect(hook.history[2].details).toEqual({ step_index: 0, attempt: 1 });
    expect(hook.history[4].details.step_index).toBe(0);
    expect(hook.current_step).toBeUndefined();
    expect(hook.checkpoints.map((c: any) => c.trigger)).toEqual(['validation', 'step_complete']);
    const done = hook.checkpoints[1];
    expect(done.step_name).toBe('validate');
    expect(done.git_branch).toBe('main');
    expect(done.git_commit).toMatch(/^[0-9a-f]{40}$/);
    // check runs in the current checkout, as it is
    expect(task.in_place).toBe(true);
    expect(task.worktree).toBe(sb.repo);
    expect(task.status).toBe('completed');
    expect(typeof hook.task_index).toBe('number');
    expect(task.task_index).toBe(hook.task_index);
    expect(readFileSync(join(dir, 'artifacts', 'validate', '1-2-stdout.log'), 'utf8')).toContain('tests ok');
    expect(readFileSync(join(dir, 'HOOK.md'), 'utf8')).toContain('**completed**');
    expect(existsSync(join(dir, 'owner.json'))).toBe(false);
    // the first run set up ATLAS_HOME, with a commented config
    expect(readFileSync(join(sb.home, 'config.yaml'), 'utf8')).toContain('#   max_checkpoints: 50');

    // every validation command left a signed receipt on this commit, verified for real
    expect(hook.receipts.map((r: any) => [r.command, r.exit_code, r.message_version, r.git_commit, r.git_dirty, r.execution_mode])).toEqual(
      [
        ['npm run lint', 0, 4, done.git_commit, false, 'local'],
        ['npm test', 0, 4, done.git_commit, false, 'local'],
      ],
    );
    // The program each command started, as found on the step's PATH.
    expect(hook.receipts[0].executable).toMatch(/^\/.*\/npm$/);
    expect(readFileSync(join(dir, 'HOOK.md'), 'utf8')).toContain('✓ verified');
    const verify = await atlas(sb, ['verify', task.id, '--require-step', 'validate', '--commit', 'HEAD']);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });

  it('fails with exit 1 when a validation command fails, after running every command, keeping the exact output', async () => {
    sb = sandbox({
      'fail.js': "process.stdout.write('out: caf\\u00e9\\n'); process.stderr.write('err line\\n'); process.exit(3);\n",
      'ok.js': "console.log('second ran');\n",
      '.atlas/config.yaml': 'validation:\n  commands: ["node fail.js", "node ok.js"]\n',
    });
    const result = await atlas(sb, ['start', 'check']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('second ran');
    expect(result.stdout).toMatch(/failed at step 1\/1 "validate": 1 of 2 validation commands failed: `node fail.js` exited with code 3/);

    const { hook, dir } = onlyTask(sb);
    expect(hook.state).toBe('failed');
    expect(transitions(hook).slice(-2)).toEqual([
      'step_running → step_validating (validation_start)',
      'step_validating → failed (step_failed)',
    ]);
    expect(hook.history.at(-1).details).toMatchObject({ step_index: 0, attempt: 1, on_failure: 'fail' });
    expect(readFileSync(join(dir, 'artifacts', 'validate', '1-1-stdout.log'))).toEqual(Buffer.from('out: café\n'));
    expect(readFileSync(join(dir, 'artifacts', 'validate', '1-1-stderr.log'))).toEqual(Buffer.from('err line\n'));
    expect(readFileSync(join(dir, 'artifacts', 'validate', '1-2-stdout.log'), 'utf8')).toBe('second ran\n');
    expect(hook.checkpoints.filter((c: any) => c.trigger === 'validation')).toEqual([]);
  });

  it('says how to configure validation when nothing can be detected, before creating a task', async () => {
    sb = sandbox();
    const result = await atlas(sb, ['start', 'check']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no validation commands found');
    expect(result.stderr).toContain('validation.commands in .atlas/config.yaml');
    expect(existsSync(join(sb.home, 'workspaces', 'check'))).toBe(false);
  });

  it('refuses to run outside a git repository', async () => {
    sb = sandbox();
    const result = await atlas(sb, ['start', 'check'], { cwd: sb.base });
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('is not inside a git repository');
    expect(result.stderr).toContain('git init');
  });

  it('lists tasks with atlas status --json', async () => {
    sb = sandbox({ '.atlas/config.yaml': 'validation:\n  commands: ["node -e 0"]\n' });
    expect((await atlas(sb, ['start', 'check', 'first check'])).code).toBe(0);
    expect((await atlas(sb, ['start', 'check', 'second check'])).code).toBe(0);
    const status = await atlas(sb, ['status', '--json']);
    expect(status.code).toBe(0);
    const data = JSON.parse(status.stdout);
    expect(data.tasks.map((t: any) => t.description)).toEqual(['second check', 'first check']);
    expect(data.tasks[0]).toMatchObject({
      state: 'completed',
      template: 'check',
      step: 1,
      steps: 1,
      activity: 'ended',
      workspace: 'second-check',
    });
    const text = await atlas(sb, ['status']);
    expect(text.stdout).toMatch(/^TASK\s+STATE\s+TEMPLATE\s+STEP\s+MODE\s+UPDATED\s+DESCRIPTION$/m);
    expect(text.stdout).toMatch(/second check/);
  });
});

describe('setup and inspection commands', () => {
  it('init sets up ATLAS_HOME once; config list shows values and sources; templates list and show', async () => {
    sb = sandbox({ '.atlas/config.yaml': 'ai:\n  model: repo-model\n' });
    const first = await atlas(sb, ['init']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`created ${join(sb.home, 'config.yaml')}`);
    expect(first.stdout).toContain(`created the signing key ${join(sb.home, 'keys', 'master.key')}`);
    const again = await atlas(sb, ['init', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({
      home: sb.home,
      created: [],
      key: [],
      git_hooks: null,
      git_hooks_status: { hooks: [{ installed: false }, { installed: false }] },
    });

    const config = await atlas(sb, ['config', 'list', '--json', '-c', 'git.push=true'], { env: { ATLAS_HOOKS_STALE_THRESHOLD: '10m' } });
    const settings = Object.fromEntries(JSON.parse(config.stdout).settings.map((s: any) => [s.key, s]));
    expect(settings['ai.model']).toMatchObject({ value: 'repo-model', source: join(sb.repo, '.atlas', 'config.yaml') });
    expect(settings['git.push']).toMatchObject({ value: true, source: 'command line' });
    expect(settings['hooks.stale_threshold']).toMatchObject({ value: 600_000, source: 'environment', env: 'ATLAS_HOOKS_STALE_THRESHOLD' });
    expect(settings['hooks.max_checkpoints']).toMatchObject({ value: 50, source: 'default' });

    writeFiles(sb.repo, { '.atlas/templates/bugfix.yaml': 'steps:\n  - name: x\n    type: command\n    run: "true"\n' });
    const list = await atlas(sb, ['templates', 'list', '--json']);
    expect(list.code).toBe(0);
    const templates = JSON.parse(list.stdout).templates.map((t: any) => `${t.name}:${t.origin}:${t.shadowed}`);
    expect(templates).toEqual(['bugfix:repo:false', 'bugfix:builtin:true', 'check:builtin:false', 'feature:builtin:false']);
    const show = await atlas(sb, ['templates', 'show', 'feature']);
    expect(show.stdout).toContain('3. review (human)');

    writeFiles(sb.repo, { '.atlas/templates/broken.yaml': 'steps:\n  - name: x\n    type: ai\n' });
    const broken = await atlas(sb, ['start', 'broken', 'x']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`${join(sb.repo, '.atlas', 'templates', 'broken.yaml')}: step 1 "x": field "prompt": is required`);
  });
});

// Lifecycle hooks end to end through the built CLI with a command agent: OnColdStart before the
// first agent step (a failure stops the step cleanly and leaves the task recoverable), OnTerminate
// when the task ends, is abandoned or its worktree is cleaned up; lifecycle.log and --verbose.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, git, onlyTask, sandbox, transitions } from './helpers/engine-fixtures.js';
import { hookRecorder, lifecycleLog } from './helpers/lifecycle-fixtures.js';

function template(hookCmd: (label: string) => string, extra = ''): string {
  return `name: hooked
steps:
  - name: prepare
    type: command
    run: echo preparing
  - name: implement
    type: ai
    max_attempts: 1
    prompt: "Do: {{description}}"
lifecycle:
  on_cold_start: ${JSON.stringify(hookCmd('tpl-cold'))}
  on_terminate:
    - ${JSON.stringify(hookCmd('tpl-term'))}
${extra}`;
}

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

function agentArgs(base: string): string[] {
  const agent = join(base, 'agent.js');
  writeFileSync(agent, `require('node:fs').writeFileSync('agent-made.txt', 'x'); console.log('agent did it');\n`);
  return ['-c', 'ai.agent=command', '-c', `ai.command=node ${agent}`];
}

describe('lifecycle hooks with a command agent', () => {
  it('runs OnColdStart before the first agent step and OnTerminate at the end, with the event as JSON on stdin, builtins → template → config', async () => {
    sb = sandbox();
    const rec = hookRecorder(sb.base);
    writeFiles(sb, { '.atlas/templates/hooked.yaml': template(rec.command) });
    const result = await atlas(sb, [
      'start',
      'hooked',
      'add a thing',
      '--verbose',
      ...agentArgs(sb.base),
      '-c',
      `lifecycle.on_cold_start=${rec.command('cfg-cold')}`,
      '-c',
      `lifecycle.on_terminate=${rec.command('cfg-term')}`,
    ]);
    expect(result.stderr).not.toMatch(/warning|error/);
    expect(result.code).toBe(0);
    const { task, dir } = onlyTask(sb);
    const runs = rec.runs();
    expect(runs.map((r) => r.label)).toEqual(['tpl-cold', 'cfg-cold', 'tpl-term', 'cfg-term']);
    const cold = runs[0]!;
    expect(cold.event).toEqual({
      task_id: task.id,
      step_name: 'implement',
      conversation_id: null,
      workspace: task.worktree,
      task_dir: dir,
      point: 'on_cold_start',
      reason: 'new_workspace',
    });
    expect(cold.env).toEqual({ point: 'on_cold_start', task: task.id, cwd: task.worktree });
    expect(runs[2]!.event).toMatchObject({ point: 'on_terminate', reason: 'completed', task_id: task.id });

    const all = lifecycleLog(dir);
    // the recording defaults ran as builtins: the prompt and the output, then the stream's end
    expect(all.filter((e) => e.source === 'builtin').map((e) => `${e.hook} ${e.outcome}`)).toEqual([
      'builtin:on_message ok',
      'builtin:on_message ok',
      'builtin:on_stream_finish ok',
    ]);
    expect(all.filter((e) => e.source === 'builtin').every((e) => /^conv-[0-9a-f]{12}$/.test(e.conversation_id))).toBe(true);
    const log = all.filter((e) => e.source !== 'builtin');
    expect(log.map((e) => `${e.point} ${e.source} ${e.outcome}`)).toEqual([
      'on_cold_start template ok',
      'on_cold_start config ok',
      'on_terminate template ok',
      'on_terminate config ok',
    ]);
    expect(log[0]).toMatchObject({
      hook: rec.command('tpl-cold'),
      task_id: task.id,
      step_name: 'implement',
      conversation_id: null,
      exit_code: 0,
    });
    expect(typeof log[0].duration_ms).toBe('number');
    // --verbose shows each run through the reporter
    expect(result.stdout).toContain(`OnColdStart hook "${rec.command('tpl-cold')}" (template): ok`);
    expect(result.stdout).toContain(`OnTerminate hook "${rec.command('cfg-term')}" (config): ok`);
  });

  it('a failing OnColdStart stops the step before the agent runs, moves what it added aside, and leaves the task recoverable; recover succeeds once it is fixed', async () => {
    sb = sandbox();
    const rec = hookRecorder(sb.base);
    // The hook leaves a half-restored file behind before failing.
    const leaving = `sh -c 'echo partial > restored.txt; ${rec.command('cold')}'`;
    writeFiles(sb, {
      '.atlas/templates/hooked.yaml': template(() => leaving).replace(
        `    - ${JSON.stringify(leaving)}`,
        `    - ${JSON.stringify(rec.command('term'))}`,
      ),
    });
    writeFileSync(rec.failMarker, '');
    const result = await atlas(sb, ['start', 'hooked', 'add a thing', ...agentArgs(sb.base)]);
    expect(result.code).toBe(5);
    const { task, dir, hook } = onlyTask(sb);
    expect(result.stdout).toContain(
      `OnColdStart hook "${leaving}" (template) failed: exit code 3; stderr: hook says: the store is unreachable`,
    );
    expect(result.stdout).toContain(`atlas recover --task ${task.id}`);
    expect(hook.state).toBe('awaiting_human');
    expect(transitions(hook).slice(-1)).toEqual(['step_running → awaiting_human (cold_start_failed)']);
    // the agent never ran; the file the hook left was moved out of the tree, not deleted
    expect(existsSync(join(task.worktree, 'agent-made.txt'))).toBe(false);
    expect(existsSync(join(task.worktree, 'restored.txt'))).toBe(false);
    expect(readFileSync(join(dir, 'artifacts', 'implement', 'cold-start-1', 'restored.txt'), 'utf8')).toBe('partial\n');
    expect(lifecycleLog(dir).map((e) => `${e.point} ${e.outcome}`)).toEqual(['on_cold_start failed']);
    expect(lifecycleLog(dir)[0].stderr_tail).toBe('hook says: the store is unreachable');
    // not terminated: OnTerminate did not run
    expect(rec.runs().map((r) => r.label)).toEqual(['cold']);

    // `atlas status` and recover see it; fixed, recover runs the step and the task completes
    rmSync(rec.failMarker);
    const recovered = await atlas(sb, ['recover', '--task', task.id, '--yes', ...agentArgs(sb.base)]);
    expect(recovered.stderr).not.toContain('error');
    expect(recovered.stdout.replace(/\s+/g, ' ')).toContain(
      'Recommended: retry_step. The OnColdStart lifecycle hook failed before step "implement" started its agent',
    );
    expect(recovered.code).toBe(0);
    const after = onlyTask(sb);
    expect(after.hook.state).toBe('completed');
    expect(existsSync(join(task.worktree, 'agent-made.txt'))).toBe(true);
    expect(rec.runs().map((r) => `${r.label}:${r.event.reason}`)).toEqual(['cold:new_workspace', 'cold:resumed', 'term:completed']);
  });

  it('resume also continues a task whose OnColdStart failed', async () => {
    sb = sandbox();
    const rec = hookRecorder(sb.base);
    writeFiles(sb, { '.atlas/templates/hooked.yaml': template(rec.command) });
    writeFileSync(rec.failMarker, '');
    expect((await atlas(sb, ['start', 'hooked', 'x', ...agentArgs(sb.base)])).code).toBe(5);
    rmSync(rec.failMarker);
    const resumed = await atlas(sb, ['resume', '--task', onlyTask(sb).id, ...agentArgs(sb.base)]);
    expect(resumed.code).toBe(0);
    expect(onlyTask(sb).hook.state).toBe('completed');
  });

  it('an OnColdStart hook that hangs is stopped at lifecycle.timeout and stops the step', async () => {
    sb = sandbox();
    writeFiles(sb, { '.atlas/templates/hooked.yaml': template(() => 'sleep 30') });
    const started = Date.now();
    const result = await atlas(sb, ['start', 'hooked', 'x', '-c', 'lifecycle.timeout=300ms', ...agentArgs(sb.base)]);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(result.code).toBe(5);
    expect(result.stdout).toContain('OnColdStart hook "sleep 30" (template) timed out: timed out after 300 ms');
    const { dir } = onlyTask(sb);
    expect(lifecycleLog(dir)[0]).toMatchObject({ point: 'on_cold_start', outcome: 'timeout' });
  });

  it('OnTerminate failures are logged and never change the outcome; failed tasks and abandon run it too', async () => {
    sb = sandbox();
    const rec = hookRecorder(sb.base);
    writeFiles(sb, { '.atlas/templates/hooked.yaml': template(rec.command).replace('ai.command', '') });
    writeFileSync(join(sb.base, 'fail-agent.js'), 'process.exit(4)\n');
    // on_cold_start ok, agent fails → task failed → OnTerminate(failed), which itself fails
    const result = await atlas(sb, [
      'start',
      'hooked',
      'x',
      '--agent',
      'command',
      '-c',
      `ai.command=node ${join(sb.base, 'fail-agent.js')}`,
      '-c',
      'lifecycle.on_terminate=exit 7',
    ]);
    expect(result.code).toBe(1);
    const { dir, task } = onlyTask(sb);
    expect(onlyTask(sb).hook.state).toBe('failed');
    expect(result.stdout).toContain('OnTerminate hook "exit 7" (config) failed: exit code 7');
    expect(
      lifecycleLog(dir)
        .filter((e) => e.source !== 'builtin')
        .map((e) => `${e.point} ${e.source} ${e.outcome}`),
    ).toEqual(['on_cold_start template ok', 'on_terminate template ok', 'on_terminate config failed']);
    // the failed run's stream finish still ran (the builtin records it), before OnTerminate
    const points = lifecycleLog(dir).map((e) => e.point);
    expect(points.indexOf('on_stream_finish')).toBeGreaterThan(points.lastIndexOf('on_message'));
    expect(points.indexOf('on_terminate')).toBeGreaterThan(points.indexOf('on_stream_finish'));
    expect(rec.runs().at(-1)!.event).toMatchObject({ point: 'on_terminate', reason: 'failed', task_id: task.id });
  });

  it('atlas abandon runs OnTerminate with reason abandoned; cleanup runs it with workspace_removed', async () => {
    sb = sandbox();
    const rec = hookRecorder(sb.base);
    writeFiles(sb, {
      '.atlas/templates/waits.yaml': `name: waits
steps:
  - name: approve
    type: human
    prompt: ok?
lifecycle:
  on_terminate: ${JSON.stringify(rec.command('term'))}
`,
    });
    expect((await atlas(sb, ['start', 'waits', 'x', '--no-interactive'])).code).toBe(5);
    const { id, dir, task } = onlyTask(sb);
    const abandoned = await atlas(sb, ['abandon', '--task', id, '--yes']);
    expect(abandoned.code).toBe(0);
    expect(rec.runs().map((r) => `${r.label}:${r.event.reason}`)).toEqual(['term:abandoned']);
    expect(lifecycleLog(dir)).toHaveLength(1);

    // past retention, cleanup removes the (clean) worktree and runs OnTerminate again
    git(task.worktree, 'status');
    const cleaned = await atlas(sb, ['cleanup', '-c', 'hooks.retention.abandoned=1ms']);
    expect(cleaned.code).toBe(0);
    expect(existsSync(task.worktree)).toBe(false);
    const last = rec.runs().at(-1)!;
    expect(last.label).toBe('term');
    expect(last.event).toMatchObject({ point: 'on_terminate', reason: 'workspace_removed', workspace: task.worktree });
  });

  it('rejects a template whose lifecycle section names an unknown point', async () => {
    sb = sandbox();
    writeFiles(sb, {
      '.atlas/templates/bad.yaml': 'name: bad\nsteps:\n  - name: a\n    type: command\n    run: "true"\nlifecycle:\n  on_start: echo hi\n',
    });
    const result = await atlas(sb, ['start', 'bad', 'x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('lifecycle: field "on_start": is not a lifecycle hook point');
  });
});

function writeFiles(sb: Sandbox, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(sb.repo, path, '..'), { recursive: true });
    writeFileSync(join(sb.repo, path), content);
  }
  git(sb.repo, 'add', '-A');
  git(sb.repo, 'commit', '-q', '-m', 'template');
}

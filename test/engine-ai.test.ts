// AI steps against scripted agents: a fake `claude` printing stream-json, and the generic
// command agent. Through the built CLI, in a task worktree.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './helpers/engine-fixtures.js';
import { atlas, ensureBuilt, git, installFakeClaude, onlyTask, readLines, sandbox, transitions } from './helpers/engine-fixtures.js';

const FIXIT = `name: fixit
description: fix with an agent, then commit
branch_prefix: fix/
steps:
  - name: implement
    type: ai
    prompt: "Fix this: {{description}} (task {{task_id}} on {{branch}})"
  - name: commit
    type: git
    action: commit
    message: "fix: {{description}}"
`;

const ASK = `name: ask
steps:
  - name: implement
    type: ai
    max_attempts: 1
    on_failure: ask
    prompt: "Fix this: {{description}}"
`;

let sb: Sandbox;
beforeAll(() => ensureBuilt());
afterEach(() => sb?.cleanup());

describe('ai steps with Claude Code', () => {
  it('runs claude -p with stream-json in the task worktree, records usage, and commits on the task branch', async () => {
    sb = sandbox({ '.atlas/templates/fixit.yaml': FIXIT });
    const { log } = installFakeClaude(sb);
    const result = await atlas(sb, ['start', 'fixit', 'the parser crash', '-c', 'ai.model=fake-model']);
    expect(result.stderr).not.toContain('error');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Looking at the bug.');
    expect(result.stdout).toContain('→ Write fixed.txt');

    const { hook, task } = onlyTask(sb);
    expect(task.worktree).toBe(join(sb.home, 'workspaces', 'the-parser-crash', 'worktree'));
    expect(task.branch).toBe('fix/the-parser-crash');
    expect(task.in_place).toBe(false);

    const [argv] = readLines(log).map((l) => JSON.parse(l) as string[]);
    // A new session gets an id atlas chose, recorded before the agent says anything.
    expect(argv!.slice(0, 4)).toEqual([
      '--session-id',
      expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      '-p',
      `Fix this: the parser crash (task ${task.id} on fix/the-parser-crash)`,
    ]);
    expect(argv).toEqual(
      expect.arrayContaining(['--output-format', 'stream-json', '--verbose', '--model', 'fake-model', '--permission-mode', 'acceptEdits']),
    );

    expect(transitions(hook)).toEqual([
      '∅ → initializing (task_start)',
      'initializing → step_pending (setup_complete)',
      'step_pending → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → step_running (step_start)',
      'step_running → step_pending (step_complete)',
      'step_pending → completed (all_steps_complete)',
    ]);
    const implemented = hook.history[3].details;
    expect(implemented).toMatchObject({
      step_index: 0,
      agent: 'claude',
      usage: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 5, cache_read_input_tokens: 7 },
      cost_usd: 0.0123,
    });
    expect(implemented.session_id).toMatch(/^sess-\d+$/);
    const implementCheckpoint = hook.checkpoints.find((c: any) => c.step_name === 'implement');
    expect(implementCheckpoint.files_snapshot.map((f: any) => f.path)).toEqual(expect.arrayContaining(['fixed.txt', 'notes/plan.md']));

    // committed in the worktree, on the task branch; the main checkout is untouched
    expect(git(task.worktree, 'log', '-1', '--format=%s')).toBe('fix: the parser crash');
    expect(git(task.worktree, 'show', '--name-only', '--format=', 'HEAD')).toBe('fixed.txt');
    expect(existsSync(join(sb.repo, 'fixed.txt'))).toBe(false);
    expect(git(sb.repo, 'branch', '--show-current')).toBe('main');
    expect(readFileSync(join(onlyTask(sb).dir, 'artifacts', 'implement', 'output.md'), 'utf8')).toBe('Fixed it by writing fixed.txt.');
  });

  it('keeps session, files and output of a failed step, and resume continues the same session', async () => {
    sb = sandbox({ '.atlas/templates/ask.yaml': ASK });
    const { log } = installFakeClaude(sb);
    const first = await atlas(sb, ['start', 'ask', 'flaky thing'], { env: { FAKE_CLAUDE_EXIT_AFTER: '1' } });
    expect(first.code).toBe(5);
    expect(first.stdout).toContain('Claude Code reported an error: gave up');
    expect(first.stdout).toMatch(/atlas resume --task task-\S+ to retry the step/);

    const waiting = onlyTask(sb).hook;
    expect(waiting.state).toBe('awaiting_human');
    expect(transitions(waiting).at(-1)).toBe('step_running → awaiting_human (step_failed)');
    const step = waiting.current_step;
    expect(step.agent_session_id).toMatch(/^sess-\d+$/);
    // notes/plan.md exists only in the agent's tool calls; fixed.txt in both those and git
    expect(step.files_touched).toEqual(['fixed.txt', 'notes/plan.md']);
    expect(step.last_output).toBe('Done: wrote fixed.txt.');
    expect(step.attempt).toBe(1);

    // from inside the task's worktree, no --task is needed
    const second = await atlas(sb, ['resume', '--note', 'the flake is fixed, carry on'], { cwd: onlyTask(sb).task.worktree });
    expect(second.code).toBe(0);
    const runs = readLines(log).map((l) => JSON.parse(l) as string[]);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.slice(0, 4)).toEqual(['--resume', step.agent_session_id, '-p', 'the flake is fixed, carry on']);
    const done = onlyTask(sb).hook;
    expect(done.state).toBe('completed');
    expect(done.history.filter((e: any) => e.trigger === 'step_start').map((e: any) => e.details.attempt)).toEqual([1, 2]);
  });

  it('retries a failed AI step by resuming its session with a note about what happened', async () => {
    sb = sandbox({ '.atlas/templates/fixit.yaml': FIXIT });
    const { log } = installFakeClaude(sb);
    const result = await atlas(sb, ['start', 'fixit', 'retry me'], { env: { FAKE_CLAUDE_FAIL_FRESH: '1' } });
    expect(result.code).toBe(0);
    const runs = readLines(log).map((l) => JSON.parse(l) as string[]);
    expect(runs).toHaveLength(2);
    expect(runs[1]![0]).toBe('--resume');
    expect(runs[1]![3]).toMatch(
      /^This is attempt 2 of the step "implement"\. The previous attempt did not finish: it failed: claude exited with code 1: fake claude: failing on purpose/,
    );
    const { hook } = onlyTask(sb);
    expect(transitions(hook).slice(2, 5)).toEqual([
      'step_pending → step_running (step_start)',
      'step_running → step_pending (step_retry)',
      'step_pending → step_running (step_start)',
    ]);
    expect(hook.history[3].details).toMatchObject({ step_index: 0, attempt: 1 });
    expect(hook.history[4].details).toEqual({ step_index: 0, attempt: 2 });
  });

  it('says how to configure an agent when claude is missing, before creating anything', async () => {
    sb = sandbox({ '.atlas/templates/fixit.yaml': FIXIT });
    const result = await atlas(sb, ['start', 'fixit', 'no agent'], { env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Claude Code (`claude`) is not installed or not on PATH');
    expect(result.stderr).toContain('ai.agent: command');
    expect(existsSync(join(sb.home, 'workspaces', 'no-agent'))).toBe(false);
  });
});

describe('ai steps with a command agent', () => {
  it('passes the prompt on stdin, in $ATLAS_PROMPT and as {prompt}, and keeps its stdout as the output', async () => {
    sb = sandbox({ '.atlas/templates/fixit.yaml': FIXIT });
    const seen = join(sb.base, 'agent-seen.json');
    const agent = join(sb.base, 'agent.js');
    writeFileSync(
      agent,
      `const fs = require('node:fs');
const stdin = fs.readFileSync(0, 'utf8');
fs.writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ arg: process.argv[2], stdin, env: process.env.ATLAS_PROMPT, task: process.env.ATLAS_TASK_ID, cwd: process.cwd() }));
fs.writeFileSync('agent-made.txt', 'hello\\n');
console.log('agent says hi');
`,
    );
    const result = await atlas(sb, ['start', 'fixit', "it's broken", '--agent', 'command', '-c', `ai.command=node ${agent} {prompt}`]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('agent says hi');
    const { task, dir, hook } = onlyTask(sb);
    const got = JSON.parse(readFileSync(seen, 'utf8'));
    const prompt = `Fix this: it's broken (task ${task.id} on fix/it-s-broken)`;
    expect(got).toEqual({ arg: prompt, stdin: prompt, env: prompt, task: task.id, cwd: task.worktree });
    expect(readFileSync(join(dir, 'artifacts', 'implement', 'output.md'), 'utf8')).toBe('agent says hi\n');
    expect(git(task.worktree, 'show', '--name-only', '--format=', 'HEAD')).toBe('agent-made.txt');
    expect(hook.history[3].details).toMatchObject({ step_index: 0, agent: 'command' });
  });
});

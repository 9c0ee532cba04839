// Pure pieces of the engine: the stream-json parser, placeholders, resume planning, the default
// config file, the plain progress lines, process groups.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeArgs } from '../src/agent/claude.js';
import { ClaudeStreamParser } from '../src/agent/claude-stream.js';
import { agentCommandLine } from '../src/agent/command-agent.js';
import { PlainReporter } from '../src/cli/progress/plain-reporter.js';
import { formatDurationSetting, renderDefaultConfig } from '../src/config/format.js';
import { loadConfig } from '../src/config/load.js';
import { LEAVES } from '../src/config/schema.js';
import type { Hook } from '../src/domain/hook.js';
import { newHook, transition } from '../src/domain/hook.js';
import type { Task } from '../src/domain/task.js';
import { initializeHome } from '../src/engine/init-home.js';
import { ProcessGroups, runProcess } from '../src/engine/processes.js';
import { fillPlaceholders } from '../src/engine/prompt.js';
import { planResume, waitReason } from '../src/engine/resume-directive.js';
import { countStepStarts, defaultRetryNote } from '../src/engine/retry-note.js';

describe('Claude Code stream-json', () => {
  const parser = () => new ClaudeStreamParser('/work/tree');

  it('reads the session, text, edits (relative to the tree), result and usage across chunk boundaries', () => {
    const p = parser();
    const lines = [
      { type: 'system', subtype: 'init', session_id: 'abc', tools: [] },
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'text', text: 'Hello' },
            { type: 'tool_use', name: 'Edit', input: { file_path: '/work/tree/src/a.ts' } },
          ],
        },
      },
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'tool_use', name: 'MultiEdit', input: { file_path: 'src/b.ts' } },
            { type: 'tool_use', name: 'NotebookEdit', input: { notebook_path: '/work/tree/n.ipynb' } },
            { type: 'tool_use', name: 'Write', input: { file_path: '/elsewhere/x' } },
          ],
        },
      },
      { type: 'assistant', message: { content: [{ type: 'tool_use', name: 'Bash', input: { command: 'npm test' } }] } },
      { type: 'user', message: { content: [{ type: 'tool_result', content: 'ok' }] } },
      {
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'All done',
        session_id: 'abc',
        total_cost_usd: 0.5,
        usage: { input_tokens: 3, output_tokens: 4 },
      },
    ];
    const text = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
    const all = [...p.push(text.slice(0, 50)), ...p.push(text.slice(50, 333)), ...p.push(text.slice(333)), ...p.end()];
    // every event is also passed on whole, for the conversation recorder
    expect(all.filter((u) => u.kind === 'event')).toHaveLength(lines.length);
    const updates = all.filter((u) => u.kind !== 'event');
    expect(updates[0]).toEqual({ kind: 'session', sessionId: 'abc' });
    expect(updates[1]).toEqual({ kind: 'text', text: 'Hello' });
    const tools = updates.filter((u) => u.kind === 'tool');
    expect(tools.map((t) => (t as { file?: string }).file)).toEqual(['src/a.ts', 'src/b.ts', 'n.ipynb', undefined, undefined]);
    expect(tools.at(-1)).toMatchObject({ summary: '$ npm test', workingOn: 'running npm test' });
    expect(updates.at(-1)).toEqual({
      kind: 'result',
      isError: false,
      text: 'All done',
      sessionId: 'abc',
      costUsd: 0.5,
      usage: { input_tokens: 3, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      permissionDenials: [],
    });
  });

  it('passes non-JSON lines through and flags error results', () => {
    const p = parser();
    expect(p.push('not json\n')).toEqual([{ kind: 'raw', text: 'not json' }]);
    expect(p.push('{"type":"result","subtype":"error_max_turns","is_error":false}\n')[1]).toMatchObject({
      kind: 'result',
      isError: true,
      text: 'error_max_turns',
    });
  });

  it('builds the command line for a new and a resumed session', () => {
    const ai = { agent: 'claude' as const, command: '', model: 'opus', permission_mode: 'acceptEdits', timeout: 1 };
    expect(claudeArgs({ prompt: 'do it', ai })).toEqual([
      '-p',
      'do it',
      '--output-format',
      'stream-json',
      '--verbose',
      '--model',
      'opus',
      '--permission-mode',
      'acceptEdits',
    ]);
    expect(claudeArgs({ prompt: 'go on', resumeSessionId: 's1', ai: { ...ai, model: '', permission_mode: '' } })).toEqual([
      '--resume',
      's1',
      '-p',
      'go on',
      '--output-format',
      'stream-json',
      '--verbose',
    ]);
    // a leading dash would read as an option; a long prompt goes on stdin
    expect(claudeArgs({ prompt: '--approve this', ai })[1]).toBe(' --approve this');
    expect(claudeArgs({ prompt: 'x', ai }, { promptOnStdin: true }).slice(0, 2)).toEqual(['-p', '--output-format']);
    // allowed tools come last: the option takes every argument after it
    expect(claudeArgs({ prompt: 'x', ai, allowedTools: ['Bash(npm test:*)', 'Read'] }).slice(-3)).toEqual([
      '--allowedTools',
      'Bash(npm test:*)',
      'Read',
    ]);
  });

  it('shell-quotes the prompt for {prompt}', () => {
    expect(agentCommandLine('agent --msg {prompt}', "it's $HOME `x`")).toBe(`agent --msg 'it'\\''s $HOME \`x\`'`);
  });
});

const task = {
  id: 'task-20260101-000000',
  description: 'fix it',
  branch: 'fix/it',
  worktree: '/w',
  steps: [{ name: 'a', type: 'ai', prompt: 'p', max_attempts: 3, on_failure: 'fail' }],
} as unknown as Task;

describe('placeholders', () => {
  it('fills task fields and earlier outputs, leaves unknown ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atlas-fill-'));
    try {
      mkdirSync(join(dir, 'artifacts', 'analyze'), { recursive: true });
      writeFileSync(join(dir, 'artifacts', 'analyze', 'output.md'), 'the cause\n');
      expect(
        fillPlaceholders('{{description}} {{ task_id }} {{branch}} {{worktree}} {{outputs.analyze}} {{outputs.plan}} {{nope}}', task, dir),
      ).toBe('fix it task-20260101-000000 fix/it /w the cause (step "plan" left no output) {{nope}}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function hookThrough(steps: [string, string, Record<string, unknown>?][]): Hook {
  let hook = newHook('task-20260101-000000', 'w', '2026-01-01T00:00:00Z');
  for (const [to, trigger, details] of steps)
    hook = transition(hook, { to: to as Hook['state'], trigger, at: '2026-01-01T00:00:01Z', ...(details ? { details } : {}) });
  return hook;
}

describe('resume planning', () => {
  const waitingFor = (trigger: string) =>
    hookThrough([
      ['step_pending', 'setup_complete'],
      ['step_running', 'step_start', { step_index: 0, attempt: 1 }],
      ['awaiting_human', trigger, { step_index: 0, signal: 'SIGINT', error: 'boom' }],
    ]);

  it('knows why a task waits', () => {
    expect(waitReason(waitingFor('human_approval_required'))).toBe('approval');
    expect(waitReason(waitingFor('interrupted'))).toBe('interrupted');
    expect(waitReason(waitingFor('step_failed'))).toBe('step_failed');
  });

  it('approval needs a decision without a terminal; interrupts and failures retry the step', () => {
    expect(planResume(waitingFor('human_approval_required'), { interactive: false })).toMatchObject({ kind: 'wait' });
    expect(planResume(waitingFor('human_approval_required'), { interactive: true })).toMatchObject({
      kind: 'run',
      entry: { kind: 'continue' },
    });
    expect(planResume(waitingFor('interrupted'), { interactive: false })).toMatchObject({ kind: 'run', entry: { kind: 'retry_step' } });
    expect(planResume(waitingFor('step_failed'), { interactive: false, note: 'fixed' })).toMatchObject({
      entry: { kind: 'retry_step', note: 'fixed' },
    });
    expect(planResume(waitingFor('step_failed'), { interactive: false, approve: true })).toMatchObject({ entry: { kind: 'approve' } });
    expect(() => planResume(waitingFor('step_failed'), { interactive: false, approve: true, reject: true })).toThrow(/exclude each other/);
  });

  it('counts attempts and tells the next one what happened', () => {
    const hook = waitingFor('interrupted');
    expect(countStepStarts(hook, 0)).toBe(1);
    expect(defaultRetryNote(hook, task.steps[0]!, 0, 2)).toContain(
      'attempt 2 of the step "a". The previous attempt did not finish: it was interrupted (SIGINT)',
    );
    expect(defaultRetryNote(waitingFor('step_failed'), task.steps[0]!, 0, 2)).toContain('it failed: boom');
  });
});

describe('default config.yaml', () => {
  it('lists every key commented out with its doc, and parses to the defaults', async () => {
    const text = renderDefaultConfig();
    for (const leaf of LEAVES) {
      expect(text).toContain(leaf.doc);
      expect(text).toContain(leaf.env);
    }
    expect(text.split('\n').every((l) => l === '' || l.startsWith('#'))).toBe(true);
    expect(formatDurationSetting(3_600_000)).toBe('1h');
    expect(formatDurationSetting(10_000)).toBe('10s');
    // Uncommenting everything gives a valid file equal to the defaults, without warnings.
    const home = mkdtempSync(join(tmpdir(), 'atlas-cfg-'));
    try {
      const lines = text.split('\n');
      const uncommented = lines
        .slice(lines.indexOf('#'))
        .filter((l) => !/^#\s*#/.test(l) && /^# {1}/.test(l))
        .map((l) => l.slice(2))
        .join('\n');
      writeFileSync(join(home, 'config.yaml'), uncommented);
      const loaded = await loadConfig({ home, env: {} });
      expect(loaded.warnings).toEqual([]);
      expect(Object.values(loaded.sources).every((s) => s.endsWith('config.yaml'))).toBe(true);
      const defaults = await loadConfig({ home: join(home, 'none'), env: {} });
      expect(loaded.config).toEqual(defaults.config);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('initializeHome creates folders and config once, never overwriting', async () => {
    const home = join(mkdtempSync(join(tmpdir(), 'atlas-home-')), 'h');
    try {
      const first = await initializeHome(home);
      expect(first.created).toEqual([home, join(home, 'workspaces'), join(home, 'templates'), join(home, 'config.yaml')]);
      writeFileSync(join(home, 'config.yaml'), 'hooks:\n  max_checkpoints: 7\n');
      expect((await initializeHome(home)).created).toEqual([]);
      expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toContain('7');
    } finally {
      rmSync(join(home, '..'), { recursive: true, force: true });
    }
  });
});

describe('plain progress', () => {
  it('prints one line per event, prefixes output lines, no control codes', () => {
    let out = '';
    const r = new PlainReporter({
      write: (s: string) => {
        out += s;
        return true;
      },
    } as unknown as NodeJS.WritableStream);
    r.taskStarted({ taskId: 't', description: 'd', worktree: '/w', branch: 'b', steps: 2 });
    r.stepStarted({ index: 0, name: 'build', type: 'command', attempt: 1, maxAttempts: 1 });
    r.output('one\ntw', 'stdout');
    r.output('o\nthree', 'stdout');
    r.note('hello');
    r.stepFinished({ index: 0, name: 'build', ok: true, durationMs: 1500, summary: 'ok' });
    r.taskFinished({ state: 'completed', exitCode: 0, message: 'task t completed' });
    expect(out).toBe(
      [
        'atlas: task t: d',
        'atlas: working tree /w (branch b), 2 steps',
        '[1/2] build (command)',
        '  | one',
        '  | two',
        '  | three',
        '  · hello',
        '✓ [1/2] build done in 1.5s: ok',
        'atlas: task t completed',
        '',
      ].join('\n'),
    );
    // eslint-disable-next-line no-control-regex
    expect(out).not.toMatch(/\x1b/);
  });
});

describe('process groups', () => {
  it('a step ends together with what it started in the background', async () => {
    const groups = new ProcessGroups();
    const started = Date.now();
    const result = await runProcess({
      command: `${JSON.stringify(process.execPath)} -e "setInterval(() => {}, 1000)" & echo started`,
      shell: true,
      cwd: tmpdir(),
      capture: true,
      groups,
    });
    expect(result.stdout.toString()).toBe('started\n');
    expect(result.exitCode).toBe(0);
    expect(groups.size).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('times out with exit 124', async () => {
    const result = await runProcess({ command: 'sleep 5', shell: true, cwd: tmpdir(), timeoutMs: 100, groups: new ProcessGroups() });
    expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
  });
});

// The pure parts of the Claude Code integration: event parsing, the guard, subagent tags,
// priming, transcript usage, commit detection and ids.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { transcriptUsage } from '../src/conversation/claude-transcript-usage.js';
import { isGitCommitCommand } from '../src/integrations/claude/edit-tools.js';
import { EventInputError, parseHookEvent, safeId } from '../src/integrations/claude/event.js';
import { guardToolCall } from '../src/integrations/claude/guard.js';
import { conversationIdFor } from '../src/integrations/claude/ledger.js';
import { shortHash, untaskedBase } from '../src/integrations/claude/places.js';
import { MAX_ADDITIONAL_CONTEXT, primingContext, shouldPrime } from '../src/integrations/claude/prime.js';
import { generatedRequestId } from '../src/integrations/claude/scope.js';
import { extractContexts, extractWorkFiles, sanitizeWorkName } from '../src/integrations/claude/tags.js';
import { fixtureText } from './helpers/claude-hook-fixtures.js';

const tmp = () => realpathSync(mkdtempSync(join(tmpdir(), 'atlas-claude-unit-')));

describe('hook event parsing', () => {
  it('reads every recorded payload, keeping unknown fields in raw', () => {
    for (const name of [
      'session-start-startup',
      'user-prompt-submit',
      'pre-tool-use-write',
      'post-tool-use-bash',
      'subagent-stop',
      'stop',
      'stop-failure',
      'session-end',
      'pre-compact',
    ]) {
      const event = parseHookEvent(fixtureText(name, '/r'), '/fallback');
      expect(event.session_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(event.cwd).toBe('/r');
    }
    const write = parseHookEvent(fixtureText('pre-tool-use-write', '/r'), '/x');
    expect(write).toMatchObject({ hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: '/r/NOTES.md' } });
    expect(write.raw['effort']).toEqual({ level: 'high' });
  });

  it('accepts unknown events and fields, falls back to the given cwd, and rejects what is not an event', () => {
    const e = parseHookEvent(
      JSON.stringify({ session_id: 's', hook_event_name: 'Notification', brand_new: [1], tool_input: 'not an object' }),
      '/here',
    );
    expect(e).toMatchObject({ hook_event_name: 'Notification', cwd: '/here' });
    expect(e.tool_input).toBeUndefined();
    expect(() => parseHookEvent('{', '/')).toThrow(EventInputError);
    expect(() => parseHookEvent('[]', '/')).toThrow(/not a JSON object/);
    expect(() => parseHookEvent('{"session_id":"s"}', '/')).toThrow(/hook_event_name/);
    expect(() => parseHookEvent('{"hook_event_name":"Stop"}', '/')).toThrow(/session_id/);
  });

  it('makes ids safe as folder names', () => {
    expect(safeId('216b5d0e-f121-4252-aa4b-79a445695ecb')).toBe('216b5d0e-f121-4252-aa4b-79a445695ecb');
    expect(safeId('../../etc')).toBe('__.._etc');
    expect(safeId('')).toBe('_');
    expect(generatedRequestId(new Date('2026-01-02T03:04:05Z'))).toMatch(/^req-20260102-030405-[0-9a-f]{6}$/);
  });
});

describe('the PreToolUse guard', () => {
  const home = tmp();
  mkdirSync(join(home, 'keys'));
  writeFileSync(join(home, 'keys', 'master.key'), 'x');
  const task = join(home, 'workspaces', 'w', 'tasks', 'task-20260101-000001');
  mkdirSync(join(task, 'artifacts'), { recursive: true });
  const guard = (toolName: string, toolInput: Record<string, unknown>, cwd = '/work') => guardToolCall({ toolName, toolInput, cwd, home });

  it('denies reading or writing the keys, by any file tool, relative or through a symlink', () => {
    expect(guard('Read', { file_path: join(home, 'keys', 'master.key') })).toMatch(/signing keys .* off limits.*atlas checkpoint/);
    expect(guard('Write', { file_path: join(home, 'keys', 'new.key'), content: '' })).toMatch(/signing keys/);
    expect(guard('Read', { file_path: 'keys/master.key' }, home)).toMatch(/signing keys/);
    expect(guard('Grep', { pattern: 'x', path: home })).toMatch(/contains ATLAS_HOME/);
    const link = join(tmp(), 'k');
    symlinkSync(join(home, 'keys'), link);
    expect(guard('Read', { file_path: join(link, 'master.key') })).toMatch(/signing keys/);
  });

  it("denies edits of a task's hook.json, receipts and artifacts but lets them be read", () => {
    expect(guard('Edit', { file_path: join(task, 'hook.json'), old_string: 'a', new_string: 'b' })).toMatch(/written by atlas only/);
    expect(guard('Write', { file_path: join(task, 'artifacts', 'validate', 'out.txt') })).toMatch(/written by atlas only/);
    expect(guard('MultiEdit', { file_path: '/elsewhere/a.ts', edits: [{ file_path: join(task, 'hook.json') }] })).toMatch(
      /written by atlas only/,
    );
    expect(guard('NotebookEdit', { notebook_path: join(task, 'receipts', 'r.json') })).toMatch(/written by atlas only/);
    expect(guard('Read', { file_path: join(task, 'hook.json') })).toBeUndefined();
    expect(guard('Read', { file_path: join(task, 'HOOK.md') })).toBeUndefined();
  });

  it('denies Bash commands naming the keys or a task record, and allows ordinary ones', () => {
    expect(guard('Bash', { command: `cat ${home}/keys/master.key` })).toMatch(/signing keys/);
    expect(guard('Bash', { command: 'cp ~/.atlas/keys/master.key /tmp/k' })).toMatch(/signing keys/);
    expect(guard('Bash', { command: 'ls $ATLAS_HOME/keys' })).toMatch(/signing keys/);
    expect(guard('Bash', { command: 'base64 master.key' })).toMatch(/signing keys/);
    expect(guard('Bash', { command: `sed -i s/failed/passed/ ${task}/hook.json` })).toMatch(/only atlas writes/);
    expect(guard('Bash', { command: 'echo x > /somewhere/tasks/task-20260101-000001/artifacts/a' })).toMatch(/only atlas writes/);
    expect(guard('Bash', { command: 'npm test && atlas checkpoint "tests pass"' })).toBeUndefined();
    expect(guard('Bash', { command: 'cat package.json hook.json' })).toBeUndefined();
    expect(guard('Bash', {})).toBeUndefined();
    expect(guard('Read', { file_path: '/work/src/index.ts' })).toBeUndefined();
    expect(guard('WebFetch', { url: 'https://example.com' })).toBeUndefined();
  });
});

describe('subagent tags', () => {
  it('extracts context and work files, with names that cannot escape work/', () => {
    const text =
      '<context>found the cause</context>\n<work filename="notes/plan.md">\nstep 1</work><work filename=\'../../../etc/passwd\'>x</work><work filename="/abs/a.txt">a</work><context>  </context>';
    expect(extractContexts(text)).toEqual(['found the cause']);
    expect(extractWorkFiles(text)).toEqual([
      { name: 'notes/plan.md', content: 'step 1' },
      { name: 'etc/passwd', content: 'x' },
      { name: 'abs/a.txt', content: 'a' },
    ]);
    expect(sanitizeWorkName('..')).toBeUndefined();
    expect(sanitizeWorkName('a\\b/.hidden')).toBe('a/b/_hidden');
    expect(sanitizeWorkName('what?*.md')).toBe('what__.md');
  });
});

describe('priming', () => {
  const hook = (state: string, trigger = 'interrupted', step = true): any => ({
    state,
    history: [{ timestamp: 't', from_state: 'step_running', to_state: state, trigger }],
    ...(step ? { current_step: { step_name: 'implement', step_index: 0 } } : {}),
  });

  it('primes interrupted, recovering and mid-step tasks only', () => {
    expect(shouldPrime(hook('awaiting_human'))).toBe(true);
    expect(shouldPrime(hook('awaiting_human', 'approval_requested'))).toBe(false);
    expect(shouldPrime(hook('recovering'))).toBe(true);
    expect(shouldPrime(hook('step_running'))).toBe(true);
    expect(shouldPrime(hook('step_running', 'x', false))).toBe(false);
    expect(shouldPrime(hook('completed'))).toBe(false);
  });

  it('puts what to do first and stays within the cap', () => {
    const md = [
      '# Hook: t',
      '',
      'summary',
      '',
      '## Current step',
      '',
      'implement',
      '',
      '## What to do now',
      '',
      'run atlas recover',
      '',
      '## Recent history',
      '',
      'x'.repeat(30_000),
      '',
      '## Troubleshooting',
      '',
      'help',
      '',
    ].join('\n');
    const out = primingContext(md, 'task-1');
    expect(out.length).toBeLessThanOrEqual(MAX_ADDITIONAL_CONTEXT);
    expect(out.indexOf('## What to do now')).toBeLessThan(out.indexOf('## Current step'));
    expect(out).toContain('task task-1');
    expect(out).toContain('brief cut to fit');
    expect(out).not.toContain('## Troubleshooting');
    const small = primingContext('# Hook\n\n## Extra\n\nmore\n', 't', 10_000);
    expect(small).toContain('## Extra');
  });
});

describe('transcript usage', () => {
  it('counts each message id once, takes the final figures, and includes subagents', () => {
    const dir = tmp();
    const transcript = join(dir, 's1.jsonl');
    const line = (id: string, model: string, out: number, extra = {}) =>
      JSON.stringify({
        type: 'assistant',
        message: {
          id,
          model,
          usage: { input_tokens: 10, output_tokens: out, cache_read_input_tokens: 2, cache_creation_input_tokens: 1, ...extra },
        },
      });
    writeFileSync(
      transcript,
      [
        line('m1', 'opus', 1),
        line('m1', 'opus', 5),
        JSON.stringify({ type: 'user', message: { content: 'hi' } }),
        line('m2', 'opus', 7),
        '{"type":"assistant","usage"',
        '',
      ].join('\n'),
    );
    mkdirSync(join(dir, 's1', 'subagents'), { recursive: true });
    writeFileSync(join(dir, 's1', 'subagents', 'agent-a.jsonl'), `${line('m3', 'haiku', 3)}\n${line('m2', 'opus', 7)}\n`);
    const u = transcriptUsage(transcript);
    expect(u).toMatchObject({
      messages: 3,
      input_tokens: 30,
      output_tokens: 15,
      cache_read_tokens: 6,
      cache_creation_tokens: 3,
      model: 'opus',
    });
    expect(u.models.map((m) => [m.model, m.output_tokens])).toEqual([
      ['opus', 12],
      ['haiku', 3],
    ]);
    expect(transcriptUsage(join(dir, 'missing.jsonl')).messages).toBe(0);
  });
});

describe('small helpers', () => {
  it('recognises git commit in its spellings', () => {
    expect(isGitCommitCommand('git commit -m x')).toBe(true);
    expect(isGitCommitCommand('git add -A && git -c user.name=a -c user.email=a@b commit -q -m notes')).toBe(true);
    expect(isGitCommitCommand('git -C ../repo commit --amend')).toBe(true);
    expect(isGitCommitCommand('git log --grep commit')).toBe(false);
    expect(isGitCommitCommand('echo git commit-tree')).toBe(true);
    expect(isGitCommitCommand('gitk commit')).toBe(false);
  });

  it('derives stable conversation ids and session folders', () => {
    expect(conversationIdFor('ff0ab16e-c1b9-48cc-9bed-0e8104c75dea')).toBe('conv-ff0ab16ec1b9');
    expect(conversationIdFor('zz')).toMatch(/^conv-[0-9a-f]{12}$/);
    expect(conversationIdFor('zz')).toBe(conversationIdFor('zz'));
    expect(shortHash('a')).not.toBe(shortHash('b'));
    expect(untaskedBase('/h', '/src/my repo')).toMatch(/^\/h\/sessions\/my_repo-[0-9a-f]{8}$/);
    expect(untaskedBase('/h', '/')).toMatch(/sessions\/root-/);
  });
});

describe('failures while handling an event', () => {
  it('blocks (exit 2) when the guard itself fails, and sorts other failures into one non-blocking line', async () => {
    const { BlockingError, handleEvent } = await import('../src/integrations/claude/handle.js');
    const { AtlasError } = await import('../src/domain/errors.js');
    const { classifyFailure } = await import('../src/integrations/claude/entry.js');
    const broken = new Proxy(
      {},
      {
        get: () => {
          throw new Error('boom');
        },
        ownKeys: () => {
          throw new Error('boom');
        },
      },
    );
    const event = {
      session_id: 's',
      hook_event_name: 'PreToolUse',
      cwd: '/',
      tool_name: 'Read',
      tool_input: broken as Record<string, unknown>,
      raw: {},
    };
    await expect(handleEvent(event, { home: tmp(), env: {} })).rejects.toBeInstanceOf(BlockingError);
    expect(classifyFailure(new BlockingError('refused'), 'PreToolUse Read')).toEqual({ code: 2, line: 'refused', log: false });
    expect(classifyFailure(new EventInputError('bad'), 'x').code).toBe(1);
    expect(classifyFailure(Object.assign(new Error('disk full'), { code: 'ENOSPC' }), 'Stop').line).toBe('Stop: not recorded (disk full)');
    expect(classifyFailure(new AtlasError('could not lock'), 'Stop').line).toBe('Stop: not recorded (could not lock)');
    expect(classifyFailure(new TypeError('x is undefined'), 'Stop').line).toBe(
      'Stop: internal error, not recorded (TypeError: x is undefined); the session goes on',
    );
    expect(classifyFailure('odd', 'Stop').line).toContain('(Error: odd)');
  });
});

describe('installing in-process', () => {
  it('installs and uninstalls in every scope, refuses what it cannot read, and builds the launch arguments', async () => {
    const { installClaudeHooks, uninstallClaudeHooks, settingsPath } = await import('../src/integrations/claude/install.js');
    const { claudeHookArgs } = await import('../src/integrations/claude/launch.js');
    const base = tmp();
    const home = join(base, 'home');
    const env = { CLAUDE_CONFIG_DIR: join(base, 'cc') };
    expect(settingsPath('user', base, {})).toMatch(/\.claude\/settings\.json$/);
    expect(settingsPath('local', base, env)).toBe(join(base, '.claude', 'settings.local.json'));
    for (const scope of ['project', 'local', 'user'] as const) {
      const made = await installClaudeHooks({ scope, cwd: base, env, home, command: "node '/x/bin/claude-hook.cjs'" });
      expect(made.action).toBe('created');
      expect((await installClaudeHooks({ scope, cwd: base, env, home, command: "node '/x/bin/claude-hook.cjs'" })).action).toBe(
        'unchanged',
      );
      expect((await uninstallClaudeHooks({ scope, cwd: base, env, home })).action).toBe('deleted');
      expect((await uninstallClaudeHooks({ scope, cwd: base, env, home })).action).toBe('not-installed');
    }
    // A file the user had, with only atlas's hooks added: uninstall keeps the (now empty) file.
    const own = settingsPath('project', base, env);
    writeFileSync(own, '{}\n');
    expect((await installClaudeHooks({ scope: 'project', cwd: base, env, home })).action).toBe('installed');
    expect((await uninstallClaudeHooks({ scope: 'project', cwd: base, env, home })).action).toBe('removed');
    expect(readFileSync(own, 'utf8')).toBe('{}\n');
    expect((await uninstallClaudeHooks({ scope: 'project', cwd: base, env, home })).action).toBe('not-installed');
    mkdirSync(settingsPath('local', base, env));
    await expect(installClaudeHooks({ scope: 'local', cwd: base, env, home })).rejects.toThrow(/cannot read/);
    const args = claudeHookArgs();
    expect(args[0]).toBe('--settings');
    expect(JSON.parse(args[1]!).hooks.PreToolUse[0].hooks[0].command).toMatch(/bin\/claude-hook\.cjs'?$/);
  });
});

// `atlas claude-hook` fed the recorded real payloads: the request folder and its audit trail,
// request scoping without prompt_id, what a task learns (files, heartbeat, last output, tokens,
// commits), SessionStart priming, the guard's decision, and the exit codes.
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHookOnce } from '../src/integrations/claude/entry.js';
import { conversationIdFor } from '../src/integrations/claude/ledger.js';
import { readSessionEntry } from '../src/integrations/claude/session-map.js';
import { fixtureEvent, HOOK_BIN, readJsonLines, runAsync, runHook, writeDiskTask } from './helpers/claude-hook-fixtures.js';
import { ensureBuilt, git } from './helpers/engine-fixtures.js';

const SESSION = 'ff0ab16e-c1b9-48cc-9bed-0e8104c75dea';
const PROMPT = '216b5d0e-f121-4252-aa4b-79a445695ecb';

function setup() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'atlas-claude-events-')));
  const repo = join(base, 'repo');
  const home = join(base, 'home');
  const config = join(base, 'claude-config');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'init');
  // The transcript the payloads point at, as Claude Code writes it.
  const projects = join(config, 'projects', '-tmp-atlas-fixture-repo');
  mkdirSync(join(projects, SESSION, 'subagents'), { recursive: true });
  // One line per content block: m1 thinks aloud and calls a tool, m2 is the turn's last message.
  const assistant = (id: string, out: number, block: Record<string, unknown>) =>
    JSON.stringify({
      type: 'assistant',
      promptId: PROMPT,
      message: {
        id,
        model: 'claude-opus-4-8',
        content: [block],
        usage: { input_tokens: 10, output_tokens: out, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      },
    });
  const transcript = join(projects, `${SESSION}.jsonl`);
  const lastMessage = assistant('m2', 5, { type: 'text', text: 'All done here.' });
  writeFileSync(
    transcript,
    [
      JSON.stringify({ type: 'user', promptId: 'older' }),
      JSON.stringify({ type: 'user', promptId: PROMPT, message: { content: 'please write the notes' } }),
      assistant('m1', 5, { type: 'text', text: 'Writing the notes.' }),
      assistant('m1', 5, { type: 'tool_use', id: 'toolu_1', name: 'Write', input: {} }),
      lastMessage,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(projects, SESSION, 'subagents', 'agent-a4fa1e1ad0842b7ee.jsonl'),
    `${assistant('m3', 5, { type: 'text', text: 'sub found things' })}\n`,
  );
  const env: NodeJS.ProcessEnv = { ...process.env, ATLAS_HOME: home };
  delete env['ATLAS_CLAUDE_LAUNCHED'];
  delete env['ATLAS_CONVERSATION_ID'];
  const out: string[] = [];
  const err: string[] = [];
  const send = async (name: string, change: Record<string, unknown> = {}, extraEnv: NodeJS.ProcessEnv = {}) => {
    out.length = 0;
    err.length = 0;
    const code = await runHookOnce({
      input: fixtureEvent(name, repo, { session_id: SESSION, ...change }, config),
      env: { ...env, ...extraEnv },
      cwd: repo,
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
    });
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  return { base, repo, home, config, env, send, transcript, lastMessage };
}

const SEQUENCE = [
  'session-start-startup',
  'user-prompt-submit',
  'pre-tool-use-write',
  'post-tool-use-write',
  'pre-tool-use-edit',
  'post-tool-use-edit',
  'pre-tool-use-read',
  'post-tool-use-failure-read',
  'pre-tool-use-bash',
  'post-tool-use-bash',
  'pre-tool-use-agent',
  'subagent-start',
  'subagent-stop',
  'post-tool-use-agent',
  'stop',
  'session-end',
];

describe('a session no task owns', () => {
  it('records the request folder under ATLAS_HOME/sessions, never in the repository', async () => {
    const t = setup();
    for (const name of SEQUENCE) expect((await t.send(name)).code).toBe(0);
    const sessions = join(t.home, 'sessions');
    const [repoDir] = readdirSync(sessions);
    expect(repoDir).toMatch(/^repo-[0-9a-f]{8}$/);
    const dir = join(sessions, repoDir!, PROMPT);
    const events = readJsonLines(join(dir, 'hook-events.jsonl')).map((e) => `${e.hook_event_name}${e.tool_name ? ` ${e.tool_name}` : ''}`);
    expect(events).toEqual(
      SEQUENCE.slice(1)
        .map((n) => JSON.parse(fixtureEvent(n, t.repo)))
        .map((e) => `${e.hook_event_name}${e.tool_name ? ` ${e.tool_name}` : ''}`),
    );
    expect(readJsonLines(join(sessions, repoDir!, 'session-events', `${SESSION}.jsonl`))[0].hook_event_name).toBe('SessionStart');
    expect(readFileSync(join(dir, 'context.md'), 'utf8')).toBe(
      '# Request\n\nplease write the notes\n\n## general-purpose (a4fa1e1ad0842b7ee)\n\nsub found things\n',
    );
    expect(readFileSync(join(dir, 'work', 'report.md'), 'utf8')).toBe('report body');
    expect(existsSync(join(dir, 'session-logs', 'agent-a4fa1e1ad0842b7ee.jsonl'))).toBe(true);
    const snapshot = readFileSync(join(dir, 'session-logs', `${SESSION}.jsonl`), 'utf8');
    expect(snapshot).not.toContain('older');
    const state = JSON.parse(readFileSync(join(dir, '.state.json'), 'utf8'));
    expect(state).toMatchObject({
      request_id: PROMPT,
      prompt_source: 'user',
      last_output: 'All done here.',
      files_touched: [join(t.repo, 'NOTES.md')],
    });
    expect(state.agents.a4fa1e1ad0842b7ee).toMatchObject({ agent_type: 'general-purpose', status: 'stopped' });
    expect(state.usage).toMatchObject({ messages: 3, input_tokens: 30, output_tokens: 15 });
    expect(state.ended_at).toBeDefined();
    expect(readdirSync(t.repo)).toEqual(['.git']);
  });

  it('scopes events without prompt_id to a generated request, and closes a subagent that never stopped', async () => {
    const t = setup();
    await t.send('session-start-startup');
    await t.send('user-prompt-submit', { prompt_id: undefined, source: 'scheduled' });
    const entry = readSessionEntry(t.home, SESSION)!;
    expect(entry.request_id).toMatch(/^req-\d{8}-\d{6}-[0-9a-f]{6}$/);
    await t.send('subagent-start', { prompt_id: undefined });
    await t.send('pre-compact', { prompt_id: undefined });
    await t.send('stop-failure', { prompt_id: undefined });
    await t.send('session-end', { prompt_id: undefined });
    const dir = join(entry.base_dir, entry.request_id!);
    const state = JSON.parse(readFileSync(join(dir, '.state.json'), 'utf8'));
    expect(state).toMatchObject({ prompt_source: 'scheduled', compactions: 1, stop_error: 'unknown' });
    expect(state.agents.a4fa1e1ad0842b7ee).toMatchObject({ status: 'unknown' });
    expect(readFileSync(join(dir, 'context.md'), 'utf8')).toContain('# Request (source: scheduled)');
    // An event of a kind atlas does not know is recorded too.
    expect((await t.send('stop', { hook_event_name: 'TeammateIdle', prompt_id: undefined })).code).toBe(0);
    expect(readJsonLines(join(dir, 'hook-events.jsonl')).map((e) => e.hook_event_name)).toContain('TeammateIdle');
  });
  it('waits at Stop for the transcript to hold the last message Claude Code is still writing (issue 22, defect 4)', async () => {
    const t = setup();
    // Stop fires before the turn's last message reaches the transcript: it arrives 300 ms later.
    const text = readFileSync(t.transcript, 'utf8');
    writeFileSync(t.transcript, text.replace(`${t.lastMessage}\n`, ''));
    for (const name of SEQUENCE.slice(0, SEQUENCE.indexOf('stop'))) await t.send(name);
    const late = setTimeout(() => appendFileSync(t.transcript, `${t.lastMessage}\n`), 300);
    const started = Date.now();
    await t.send('stop');
    clearTimeout(late);
    expect(Date.now() - started).toBeLessThan(2000);
    const [repoDir] = readdirSync(join(t.home, 'sessions'));
    const state = JSON.parse(readFileSync(join(t.home, 'sessions', repoDir!, PROMPT, '.state.json'), 'utf8'));
    expect(state.usage).toMatchObject({ messages: 3, input_tokens: 30, output_tokens: 15 });
  });
});

describe('a session in a task worktree', () => {
  it('feeds the task: files touched, heartbeat, last output, tokens once, commits', async () => {
    const t = setup();
    const { id, dir: taskDir } = writeDiskTask(t.home, t.repo, 'main', { withStep: true });
    for (const name of SEQUENCE.slice(0, 4)) expect((await t.send(name)).code).toBe(0);
    const reqDir = join(taskDir, 'requests', PROMPT);
    expect(readJsonLines(join(reqDir, 'hook-events.jsonl')).map((e) => e.hook_event_name)).toEqual([
      'UserPromptSubmit',
      'PreToolUse',
      'PostToolUse',
    ]);
    let hook = JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8'));
    expect(hook.current_step.files_touched).toEqual(['NOTES.md']);
    expect(existsSync(join(taskDir, 'HOOK.md'))).toBe(true);
    // The session became the owner of the ownerless running task, with Claude Code's pid.
    const owner = JSON.parse(readFileSync(join(taskDir, 'owner.json'), 'utf8'));
    expect(owner).toMatchObject({ claude_session_id: SESSION, pid: expect.any(Number) });

    // A commit through Bash, without atlas's git hooks: a git_commit checkpoint.
    writeFileSync(join(t.repo, 'NOTES.md'), 'hi\n');
    git(t.repo, 'add', '-A');
    git(t.repo, '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '-m', 'notes');
    await t.send('post-tool-use-bash');
    await t.send('post-tool-use-bash');
    hook = JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8'));
    expect(hook.checkpoints.map((c: any) => [c.trigger, c.git_commit])).toEqual([['git_commit', git(t.repo, 'rev-parse', 'HEAD')]]);

    await t.send('stop');
    await t.send('stop');
    hook = JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8'));
    expect(hook.current_step.last_output).toBe('All done here.');
    const conv = JSON.parse(readFileSync(join(taskDir, 'conversations', conversationIdFor(SESSION), 'conversation.json'), 'utf8'));
    expect(conv).toMatchObject({
      task_id: id,
      step_name: 'implement',
      agent: 'claude',
      session_id: SESSION,
      status: 'running',
      stats: { total_input_tokens: 30, total_output_tokens: 15, cost_usd: null, partial: true },
    });
    await t.send('session-end');
    expect(existsSync(join(taskDir, 'owner.json'))).toBe(false);
    const ended = JSON.parse(readFileSync(join(taskDir, 'conversations', conversationIdFor(SESSION), 'conversation.json'), 'utf8'));
    expect(ended).toMatchObject({ status: 'completed', stats: { total_input_tokens: 30 } });
    expect(ended.ended_at).not.toBeNull();
  });

  it('leaves tokens to the stream when atlas launched the session, and does not prime it', async () => {
    const t = setup();
    const { dir: taskDir } = writeDiskTask(t.home, t.repo, 'main');
    const launched = { ATLAS_CLAUDE_LAUNCHED: '1' };
    expect((await t.send('session-start-startup', {}, launched)).stdout).toBe('');
    await t.send('user-prompt-submit', {}, launched);
    await t.send('stop', {}, launched);
    expect(existsSync(join(taskDir, 'conversations'))).toBe(false);
    expect(JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8')).current_step.last_output).toBe('All done here.');
  });

  it('primes a session started in an interrupted task, and not one in a running task with a live owner', async () => {
    const t = setup();
    const { id, dir: taskDir } = writeDiskTask(t.home, t.repo, 'main', { state: 'awaiting_human', trigger: 'interrupted' });
    writeFileSync(
      join(taskDir, 'HOOK.md'),
      '# Hook: x\n\nsummary\n\n## Current step\n\nimplement\n\n## What to do now\n\nRun `atlas recover`.\n',
    );
    const started = await t.send('session-start-startup');
    const out = JSON.parse(started.stdout);
    expect(out.hookSpecificOutput.hookEventName).toBe('SessionStart');
    expect(out.hookSpecificOutput.additionalContext).toContain(`task ${id}`);
    expect(out.hookSpecificOutput.additionalContext.indexOf('What to do now')).toBeLessThan(
      out.hookSpecificOutput.additionalContext.indexOf('## Current step'),
    );
    // awaiting_human is no crash: the session does not take ownership.
    expect(existsSync(join(taskDir, 'owner.json'))).toBe(false);
  });

  it('never writes into a task folder removed during the session', async () => {
    const t = setup();
    const { dir: taskDir } = writeDiskTask(t.home, t.repo, 'main');
    await t.send('user-prompt-submit');
    expect(existsSync(join(taskDir, 'requests', PROMPT))).toBe(true);
    rmSync(join(t.home, 'workspaces'), { recursive: true, force: true });
    expect((await t.send('pre-tool-use-write')).code).toBe(0);
    expect(existsSync(taskDir)).toBe(false);
    expect(readSessionEntry(t.home, SESSION)!.base_dir).toMatch(/sessions\/repo-/);
  });

  it('skips the commit checkpoint when atlas git hooks record it', async () => {
    const t = setup();
    const { dir: taskDir } = writeDiskTask(t.home, t.repo, 'main');
    mkdirSync(join(t.repo, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(t.repo, '.git', 'hooks', 'post-commit'), '#!/bin/sh\n# atlas-managed-hook: post-commit\n');
    await t.send('user-prompt-submit');
    await t.send('post-tool-use-bash');
    expect(JSON.parse(readFileSync(join(taskDir, 'hook.json'), 'utf8')).checkpoints).toEqual([]);
  });
});

describe('the guard and the exit codes', () => {
  it('denies a Read of the master key with a permission decision, even when recording fails', async () => {
    const t = setup();
    const key = join(t.home, 'keys', 'master.key');
    const denied = await t.send('pre-tool-use-read', { tool_input: { file_path: key } });
    expect(denied.code).toBe(0);
    const decision = JSON.parse(denied.stdout).hookSpecificOutput;
    expect(decision).toMatchObject({ hookEventName: 'PreToolUse', permissionDecision: 'deny' });
    expect(decision.permissionDecisionReason).toMatch(/atlas checkpoint/);
    const trail = readJsonLines(join(readSessionEntry(t.home, SESSION)!.base_dir, PROMPT, 'hook-events.jsonl'));
    expect(trail.at(-1).atlas_denied).toBe(decision.permissionDecisionReason);
    // ATLAS_HOME is a file: nothing can be recorded, the decision still stands.
    const blocked = join(t.base, 'home-file');
    writeFileSync(blocked, '');
    const still = await runHookOnce({
      input: fixtureEvent('pre-tool-use-read', t.repo, { tool_input: { file_path: join(blocked, 'keys', 'master.key') } }),
      env: { ...t.env, ATLAS_HOME: blocked },
      cwd: t.repo,
      stdout: () => {},
      stderr: () => {},
    });
    expect(still).toBe(0);
  });

  it('exits 1 with one line for bad input and I/O failures, and logs them', async () => {
    const t = setup();
    const lines: string[] = [];
    const code = await runHookOnce({ input: 'not json', env: t.env, cwd: t.repo, stdout: () => {}, stderr: (s) => lines.push(s) });
    expect(code).toBe(1);
    expect(lines.join('')).toMatch(/^atlas claude-hook: the event on stdin is not JSON[^\n]*\n$/);
    expect(readFileSync(join(t.home, 'claude', 'hook-errors.log'), 'utf8')).toContain('not JSON');
    const blocked = join(t.base, 'home-file');
    writeFileSync(blocked, '');
    const io: string[] = [];
    expect(
      await runHookOnce({
        input: fixtureEvent('user-prompt-submit', t.repo),
        env: { ...t.env, ATLAS_HOME: blocked },
        cwd: t.repo,
        stdout: () => {},
        stderr: (s) => io.push(s),
      }),
    ).toBe(1);
    expect(io.join('')).toMatch(/^atlas claude-hook: UserPromptSubmit: not recorded \(/);
    expect(io.join('').split('\n').filter(Boolean)).toHaveLength(1);
  });

  it('runs from the built entry: deny JSON on stdout, exit codes, no stack traces', async () => {
    ensureBuilt();
    const t = setup();
    const key = join(t.home, 'keys', 'master.key');
    const denied = await runHook(fixtureEvent('pre-tool-use-read', t.repo, { tool_input: { file_path: key } }), t.repo, t.env);
    expect(denied.code).toBe(0);
    expect(JSON.parse(denied.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
    const bad = await runHook('{"hook_event_name": "Stop"}', t.repo, t.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('atlas claude-hook: the event has no session_id\n');
    const fine = await runAsync(process.execPath, [HOOK_BIN], {
      cwd: t.repo,
      env: t.env,
      input: fixtureEvent('pre-tool-use-write', t.repo),
    });
    expect(fine).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: t.repo, encoding: 'utf8' })).toBe('');
  });
});

describe('the session heartbeat', () => {
  it('claims an ownerless active task, refreshes its own record, leaves a live owner and a waiting task alone', async () => {
    const { sessionHeartbeat, releaseSessionOwner, claudePid } = await import('../src/integrations/claude/heartbeat.js');
    const { readTask } = await import('../src/store/task-store.js');
    const t = setup();
    const { id, dir } = writeDiskTask(t.home, t.repo, 'main');
    const link = { ref: { workspace: 'ws', id, dir }, task: readTask(dir) };
    expect(claudePid()).toEqual(expect.any(Number));
    const now = new Date();
    expect(await sessionHeartbeat(link, 's1', now)).toBe('claimed');
    expect(await sessionHeartbeat(link, 's1', new Date(now.getTime() + 1000))).toBe('skipped');
    expect(await sessionHeartbeat(link, 's1', new Date(now.getTime() + 10_000))).toBe('beat');
    // Another session while this one's Claude Code (pid) lives: left alone.
    expect(await sessionHeartbeat(link, 's2', new Date(now.getTime() + 20_000))).toBe('skipped');
    expect(await releaseSessionOwner(link, 's2')).toBe(false);
    expect(await releaseSessionOwner(link, 's1')).toBe(true);
    // An owner atlas runs (this test process, beating now) is never replaced.
    writeFileSync(
      join(dir, 'owner.json'),
      JSON.stringify({
        pid: process.pid,
        host: (await import('node:os')).hostname(),
        process_start: (await import('../src/liveness/process-identity.js')).processStartIdentity(process.pid) ?? 'unknown',
        started_at: now.toISOString(),
        heartbeat_at: now.toISOString(),
        heartbeat_interval_ms: 10_000,
        stale_threshold_ms: 300_000,
      }),
    );
    expect(await sessionHeartbeat(link, 's1', now)).toBe('skipped');
    const waiting = writeDiskTask(t.home, t.repo, 'main', { id: 'task-20260101-000002', state: 'awaiting_human' });
    expect(
      await sessionHeartbeat({ ref: { workspace: 'ws', id: waiting.id, dir: waiting.dir }, task: readTask(waiting.dir) }, 's1', now),
    ).toBe('skipped');
  });

  it('writes HOOK.md with verified receipt statuses when the hook has receipts', async () => {
    const { recordFiles } = await import('../src/integrations/claude/task-feed.js');
    const { readTask } = await import('../src/store/task-store.js');
    const t = setup();
    const { id, dir } = writeDiskTask(t.home, t.repo, 'main');
    const hook = JSON.parse(readFileSync(join(dir, 'hook.json'), 'utf8'));
    hook.receipts = [
      {
        receipt_id: 'rcpt-00000001',
        step_name: 'implement',
        command: 'npm test',
        exit_code: 0,
        stdout_hash: 'a'.repeat(64),
        stderr_hash: 'a'.repeat(64),
        timestamp: hook.created_at,
        duration_ms: 1,
        signature: 'MEUCIQ==',
        public_key: '02'.padEnd(66, '0'),
        key_path: "m/44'/236'/0'/1/0",
      },
    ];
    writeFileSync(join(dir, 'hook.json'), JSON.stringify(hook));
    try {
      await recordFiles({ ref: { workspace: 'ws', id, dir }, task: readTask(dir) }, t.home, ['a.ts']);
    } catch {
      // A receipt this fixture cannot make valid may be refused by the hook's schema: the point is the verifier path.
    }
    expect(existsSync(join(dir, 'hook.json'))).toBe(true);
  });
});

import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conversationIdFor } from '../src/integrations/claude/ledger.js';
import { readSessionEntry } from '../src/integrations/claude/session-map.js';
import { PROMPT, SEQUENCE, SESSION, setup } from './helpers/claude-hook-events-fixtures.js';
import { fixtureEvent, readJsonLines, writeDiskTask } from './helpers/claude-hook-fixtures.js';
import { git } from './helpers/engine-fixtures.js';

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

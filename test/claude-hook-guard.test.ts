// `atlas claude-hook` fed the recorded real payloads: the guard's decision, the exit codes, and the
// session heartbeat that claims ownerless tasks and writes HOOK.md.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHookOnce } from '../src/integrations/claude/entry.js';
import { readSessionEntry } from '../src/integrations/claude/session-map.js';
import { PROMPT, SESSION, setup } from './helpers/claude-hook-events-fixtures.js';
import { fixtureEvent, HOOK_BIN, readJsonLines, runAsync, runHook, writeDiskTask } from './helpers/claude-hook-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';

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

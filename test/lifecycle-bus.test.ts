// The lifecycle runner on its own: real hook commands (sh), builtins, order, criticality,
// lifecycle.log and what the reporter is told.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import { AtlasError } from '../src/domain/errors.js';
import type { Task } from '../src/domain/task.js';
import { ProcessGroups } from '../src/engine/processes.js';
import { createLifecycleBus } from '../src/lifecycle/bus.js';
import { baseEvent, lifecycleBusForTask, taskLifecycleCommands } from '../src/lifecycle/for-task.js';
import { readLifecycleLog } from '../src/lifecycle/log.js';
import { tail } from '../src/lifecycle/run-command.js';

let dir: string;
let taskDir: string;
let workspace: string;
let groups: ProcessGroups;
const NO_COMMANDS = { on_cold_start: [], on_message: [], on_stream_finish: [], on_terminate: [], timeout: 5000 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'atlas-lifecycle-'));
  taskDir = join(dir, 'task');
  workspace = join(dir, 'ws');
  mkdirSync(taskDir);
  mkdirSync(workspace);
  groups = new ProcessGroups();
});
afterEach(() => {
  groups.terminateAll();
  rmSync(dir, { recursive: true, force: true });
});

const base = () => ({
  task_id: 'task-20260101-000000',
  step_name: 'implement',
  conversation_id: 'conv-0123456789ab',
  workspace,
  task_dir: taskDir,
});
const message = {
  key: 'm1',
  conversation_id: 'conv-0123456789ab',
  body: 'hello',
  role: 2 as const,
  timestamp: 1,
  tokens: 3,
  tool_calls: [],
};
const usage = { input_tokens: 10, output_tokens: null, cache_read_tokens: 1, cache_creation_tokens: 2, cost_usd: null, partial: true };

function notes(): { list: string[]; reporter: { note(text: string): void } } {
  const list: string[] = [];
  return { list, reporter: { note: (t: string) => list.push(t) } };
}

describe('lifecycle bus', () => {
  it('runs builtin, template then config commands, each with the event as JSON on stdin, and logs every run', async () => {
    const out = join(dir, 'out.jsonl');
    const rec = (label: string) => `printf '%s ' ${label} >> ${out}; cat >> ${out}`;
    const seen: string[] = [];
    const bus = createLifecycleBus({
      builtins: { on_message: async (e) => void seen.push(`builtin:${e.point}`) },
      template: { on_message: [rec('tpl')] },
      config: { ...NO_COMMANDS, on_message: [rec('cfg')] },
      groups,
    });
    expect(bus.hooksOf('on_message').map((h) => h.source)).toEqual(['builtin', 'template', 'config']);
    await bus.message({ ...base(), point: 'on_message', message });
    expect(seen).toEqual(['builtin:on_message']);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['tpl', 'cfg']);
    expect(JSON.parse(lines[0]!.slice(4))).toEqual({ ...base(), point: 'on_message', message });
    const { entries, skipped } = readLifecycleLog(taskDir);
    expect(skipped).toBe(0);
    expect(entries.map((e) => [e.hook, e.source, e.outcome])).toEqual([
      ['builtin:on_message', 'builtin', 'ok'],
      [rec('tpl'), 'template', 'ok'],
      [rec('cfg'), 'config', 'ok'],
    ]);
    expect(entries[1]).toMatchObject({
      point: 'on_message',
      task_id: base().task_id,
      step_name: 'implement',
      conversation_id: 'conv-0123456789ab',
      exit_code: 0,
    });
    expect(entries[0]!.exit_code).toBeUndefined();
  });

  it('keeps emission order even when callers do not await: OnMessage → OnStreamFinish → OnTerminate', async () => {
    const out = join(dir, 'order.txt');
    const cmd = `cat > /dev/null; echo $ATLAS_HOOK_POINT >> ${out}`;
    const bus = createLifecycleBus({
      config: { on_cold_start: [], on_message: [`sleep 0.2; ${cmd}`], on_stream_finish: [cmd], on_terminate: [cmd], timeout: 5000 },
      groups,
    });
    void bus.message({ ...base(), point: 'on_message', message });
    void bus.streamFinish({ ...base(), point: 'on_stream_finish', ok: true, usage, error: null });
    void bus.terminate({ ...base(), point: 'on_terminate', reason: 'completed' });
    await bus.idle();
    expect(readFileSync(out, 'utf8').trim().split('\n')).toEqual(['on_message', 'on_stream_finish', 'on_terminate']);
    expect(readLifecycleLog(taskDir).entries.map((e) => e.point)).toEqual(['on_message', 'on_stream_finish', 'on_terminate']);
  });

  it('recording (builtins) never waits behind a slow user command of an earlier message', async () => {
    const recorded: number[] = [];
    const started = Date.now();
    const bus = createLifecycleBus({
      builtins: { on_message: async () => void recorded.push(Date.now() - started), on_stream_finish: async () => void recorded.push(-1) },
      config: { ...NO_COMMANDS, on_message: ['cat > /dev/null; sleep 0.5'] },
      groups,
    });
    const done = [1, 2, 3].map(() => bus.message({ ...base(), point: 'on_message', message }));
    const finish = bus.streamFinish({ ...base(), point: 'on_stream_finish', ok: true, usage, error: null });
    await done[0];
    // all three messages recorded long before the three slow commands are through
    expect(recorded.slice(0, 3).every((ms) => ms < 400)).toBe(true);
    await finish;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    const entries = readLifecycleLog(taskDir).entries;
    // per source, the order of points holds
    expect(entries.filter((e) => e.source === 'builtin').map((e) => e.point)).toEqual([
      'on_message',
      'on_message',
      'on_message',
      'on_stream_finish',
    ]);
    expect(entries.filter((e) => e.source === 'config').map((e) => e.point)).toEqual(['on_message', 'on_message', 'on_message']);
  });

  it('OnColdStart: a failing command throws an AtlasError naming it with its stderr, and later hooks do not run', async () => {
    const out = join(dir, 'later.txt');
    const bus = createLifecycleBus({
      config: { ...NO_COMMANDS, on_cold_start: ['echo restoring; echo "no route to store" >&2; exit 9', `touch ${out}`] },
      groups,
    });
    const error = await bus.coldStart({ ...base(), point: 'on_cold_start', reason: 'new_workspace' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtlasError);
    expect((error as AtlasError).message).toBe(
      'OnColdStart hook "echo restoring; echo "no route to store" >&2; exit 9" (config) failed: exit code 9; stderr: no route to store',
    );
    expect((error as AtlasError).hint).toContain('lifecycle configuration');
    expect(() => readFileSync(out)).toThrow();
    const [entry] = readLifecycleLog(taskDir).entries;
    expect(entry).toMatchObject({ outcome: 'failed', exit_code: 9, error: 'exit code 9', stderr_tail: 'no route to store' });
    // the queue goes on after a critical failure
    await bus.terminate({ ...base(), point: 'on_terminate', reason: 'failed' });
  });

  it('OnColdStart: a failing builtin (the workspace restore) throws too, with its hint', async () => {
    const bus = createLifecycleBus({
      builtins: {
        on_cold_start: async () => {
          throw new AtlasError('the store is not reachable', { hint: 'check sync.store' });
        },
      },
      template: { on_cold_start: ['true'] },
      config: NO_COMMANDS,
      groups,
    });
    await expect(bus.coldStart({ ...base(), point: 'on_cold_start', reason: 'resumed' })).rejects.toThrow(
      'the builtin OnColdStart hook failed: the store is not reachable (check sync.store)',
    );
    expect(readLifecycleLog(taskDir).entries.map((e) => e.hook)).toEqual(['builtin:on_cold_start']);
  });

  it('OnColdStart: a timeout and a program that cannot start are failures', async () => {
    const timed = createLifecycleBus({ template: { on_cold_start: ['sleep 20'] }, config: { ...NO_COMMANDS, timeout: 200 }, groups });
    const started = Date.now();
    await expect(timed.coldStart({ ...base(), point: 'on_cold_start', reason: 'resumed' })).rejects.toThrow(
      'OnColdStart hook "sleep 20" (template) timed out: timed out after 200 ms',
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(readLifecycleLog(taskDir).entries[0]).toMatchObject({ outcome: 'timeout', exit_code: 124 });

    // The workspace is the working directory; a missing one (and task dir) makes spawn fail.
    const gone = { ...base(), workspace: join(dir, 'nope'), task_dir: join(dir, 'nope-either') };
    const bus = createLifecycleBus({ config: { ...NO_COMMANDS, on_cold_start: ['true'] }, groups });
    const notesOf = notes();
    const quiet = createLifecycleBus({ config: { ...NO_COMMANDS, on_cold_start: ['true'] }, groups, reporter: notesOf.reporter });
    await expect(bus.coldStart({ ...gone, point: 'on_cold_start', reason: 'resumed' })).rejects.toThrow(/could not start/);
    await expect(quiet.coldStart({ ...gone, point: 'on_cold_start', reason: 'resumed' })).rejects.toThrow(/could not start/);
    // lifecycle.log could not be written either (no task dir): said, not thrown
    expect(notesOf.list[0]).toMatch(/^could not write lifecycle.log/);
  });

  it('non-critical points log and report failures once per hook (every run with verbose), and never throw', async () => {
    const { list, reporter } = notes();
    const bus = createLifecycleBus({
      builtins: {
        on_stream_finish: async () => {
          throw new Error('ledger disk full');
        },
      },
      config: { ...NO_COMMANDS, on_message: ['echo oops >&2; exit 1'], on_stream_finish: ['kill -9 $$'] },
      groups,
      reporter,
    });
    await bus.message({ ...base(), point: 'on_message', message });
    await bus.message({ ...base(), point: 'on_message', message });
    await bus.streamFinish({ ...base(), point: 'on_stream_finish', ok: false, usage: null, error: 'cut off' });
    expect(list).toEqual([
      'OnMessage hook "echo oops >&2; exit 1" (config) failed: exit code 1: oops (further failures of this hook: lifecycle.log)',
      'OnStreamFinish hook builtin:on_stream_finish failed: ledger disk full (further failures of this hook: lifecycle.log)',
      'OnStreamFinish hook "kill -9 $$" (config) failed: killed by SIGKILL (further failures of this hook: lifecycle.log)',
    ]);
    expect(readLifecycleLog(taskDir).entries.map((e) => e.outcome)).toEqual(['failed', 'failed', 'failed', 'failed']);

    const verbose = notes();
    const loud = createLifecycleBus({
      config: { ...NO_COMMANDS, on_terminate: ['true', 'exit 2'] },
      groups,
      reporter: verbose.reporter,
      verbose: true,
    });
    await loud.terminate({ ...base(), point: 'on_terminate', reason: 'completed' });
    await loud.terminate({ ...base(), point: 'on_terminate', reason: 'completed' });
    expect(verbose.list).toHaveLength(4);
    expect(verbose.list[0]).toMatch(/^OnTerminate hook "true" \(config\): ok \(\d+ ms\)$/);
    expect(verbose.list[3]).toBe('OnTerminate hook "exit 2" (config) failed: exit code 2');
  });

  it("a task's template commands come from task.json, validated; the config adds its own", () => {
    const warnings: string[] = [];
    const task = {
      id: 'task-20260101-000000',
      worktree: workspace,
      lifecycle: { on_message: ['echo a'], on_terminate: 'not a list', on_cold_start: [''] },
    } as unknown as Task;
    expect(taskLifecycleCommands(task, (w) => warnings.push(w))).toEqual({ on_message: ['echo a'] });
    expect(warnings).toEqual([
      'task task-20260101-000000: task.json "lifecycle.on_cold_start" is not a list of commands; it is ignored',
      'task task-20260101-000000: task.json "lifecycle.on_terminate" is not a list of commands; it is ignored',
    ]);
    expect(taskLifecycleCommands({ ...task, lifecycle: 5 } as unknown as Task, (w) => warnings.push(w))).toEqual({});
    expect(taskLifecycleCommands({ ...task, lifecycle: undefined } as unknown as Task, (w) => warnings.push(w))).toEqual({});
    expect(warnings).toHaveLength(3);

    const config = defaultConfig();
    config.lifecycle.on_message = ['echo b'];
    const bus = lifecycleBusForTask({
      task,
      config,
      groups,
      reporter: { note: () => undefined },
      builtins: { on_message: async () => undefined },
      verbose: false,
      env: process.env,
    });
    expect(bus.hooksOf('on_message').map((h) => h.hook)).toEqual(['builtin:on_message', 'echo a', 'echo b']);
    expect(baseEvent(task, taskDir, null)).toEqual({
      task_id: task.id,
      step_name: null,
      conversation_id: null,
      workspace,
      task_dir: taskDir,
    });
  });

  it('keeps the end of long stderr, and skips torn lines of lifecycle.log', () => {
    expect(tail(`${'x'.repeat(50)}END`, 10)).toBe('…xxxxxxEND');
    expect(tail('short\n\n')).toBe('short');
    writeFileSync(
      join(taskDir, 'lifecycle.log'),
      '{"at":"2026-01-01T00:00:00Z","point":"on_message","hook":"x","duration_ms":1,"outcome":"ok"}\n{"torn\n[1]\n\n',
    );
    const { entries, skipped } = readLifecycleLog(taskDir);
    expect(entries).toHaveLength(1);
    expect(skipped).toBe(2);
  });

  it('with logPerPass, the lines of one pass are appended together, in order, and a failed append is noted', async () => {
    const { list, reporter } = notes();
    const bus = createLifecycleBus({
      builtins: { on_message: async () => undefined },
      config: NO_COMMANDS,
      groups,
      reporter,
      logPerPass: true,
    });
    for (let i = 0; i < 3; i++) void bus.message({ ...base(), point: 'on_message', message: { ...message, key: `m${i}` } });
    await bus.idle();
    expect(readLifecycleLog(taskDir).entries.map((e) => e.hook)).toEqual([
      'builtin:on_message',
      'builtin:on_message',
      'builtin:on_message',
    ]);
    // Without idle(), the end of the pass appends them (from the thread pool, so not yet when the hook has run).
    await bus.message({ ...base(), point: 'on_message', message: { ...message, key: 'm3' } });
    expect(readLifecycleLog(taskDir).entries).toHaveLength(3);
    while (readLifecycleLog(taskDir).entries.length < 4) await new Promise((done) => setImmediate(done));
    // A folder that cannot take the log: noted, the run goes on.
    const gone = join(dir, 'gone');
    await bus.message({ ...base(), task_dir: gone, point: 'on_message', message });
    await bus.idle();
    expect(list.join('\n')).toMatch(/could not write lifecycle\.log: .*ENOENT/);
  });
});

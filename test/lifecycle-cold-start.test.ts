// OnColdStart at its call site, in-process: what a failed run added to the tree is moved aside,
// the reason (new workspace or resumed), and OnTerminate outside a run (abandon, cleanup).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import { newHook } from '../src/domain/hook.js';
import type { Task } from '../src/domain/task.js';
import { ProcessGroups } from '../src/engine/processes.js';
import { createLifecycleBus } from '../src/lifecycle/bus.js';
import { coldStartReason, runColdStart } from '../src/lifecycle/cold-start.js';
import { readLifecycleLog } from '../src/lifecycle/log.js';
import { emitTerminate } from '../src/lifecycle/standalone.js';
import { makeGitRepo, tempDir } from './helpers/core-fixtures.js';

let repo: string;
let taskDir: string;
let groups: ProcessGroups;
beforeEach(() => {
  repo = makeGitRepo();
  taskDir = tempDir('atlas-cold-task-');
  groups = new ProcessGroups();
});
afterEach(() => {
  groups.terminateAll();
  rmSync(repo, { recursive: true, force: true });
  rmSync(taskDir, { recursive: true, force: true });
});

const NO_COMMANDS = { on_cold_start: [], on_message: [], on_stream_finish: [], on_terminate: [], timeout: 5000 };
const steps = [
  { name: 'plan', type: 'command', run: ['true'], max_attempts: 1, on_failure: 'fail' },
  { name: 'implement', type: 'ai', prompt: 'x', max_attempts: 3, on_failure: 'fail' },
];
const task = () =>
  ({
    id: 'task-20260101-000000',
    worktree: repo,
    steps,
    lifecycle: { on_terminate: ['cat > /dev/null; echo "$ATLAS_HOOK_POINT $PWD" > ../term.txt'] },
  }) as unknown as Task;

describe('runColdStart', () => {
  it('succeeds quietly, or moves what the failed run added (files and folders) out of the tree', async () => {
    writeFileSync(join(repo, 'mine.txt'), 'untracked before the hook\n');
    const ok = createLifecycleBus({ template: { on_cold_start: ['cat > /dev/null; touch restored.txt'] }, config: NO_COMMANDS, groups });
    expect(await runColdStart(ok, { task: task(), taskDir, stepName: 'implement', attempt: 1, reason: 'new_workspace' })).toBeUndefined();
    expect(existsSync(join(repo, 'restored.txt'))).toBe(true);

    const failing = createLifecycleBus({
      template: {
        on_cold_start: ['mkdir -p cache/deep && echo c > cache/deep/f && echo half > half.txt && echo "disk full" >&2 && exit 1'],
      },
      config: NO_COMMANDS,
      groups,
    });
    const failure = await runColdStart(failing, { task: task(), taskDir, stepName: 'implement', attempt: 2, reason: 'resumed' });
    expect(failure?.error.message).toContain('failed: exit code 1; stderr: disk full');
    expect(failure?.moved.sort()).toEqual(['cache', 'half.txt']);
    expect(failure?.movedTo).toBe(join(taskDir, 'artifacts', 'implement', 'cold-start-2'));
    expect(readFileSync(join(failure!.movedTo!, 'cache', 'deep', 'f'), 'utf8')).toBe('c\n');
    // what was there before the run stays
    expect(existsSync(join(repo, 'mine.txt'))).toBe(true);
    expect(existsSync(join(repo, 'restored.txt'))).toBe(true);
    expect(existsSync(join(repo, 'half.txt'))).toBe(false);
  });

  it('reports a failure that added nothing, and works when the workspace is not a git tree', async () => {
    const failing = createLifecycleBus({ template: { on_cold_start: ['exit 2'] }, config: NO_COMMANDS, groups });
    expect(await runColdStart(failing, { task: task(), taskDir, stepName: 'implement', attempt: 1, reason: 'resumed' })).toMatchObject({
      moved: [],
    });
    const plain = tempDir('atlas-cold-plain-');
    const noGit = { ...task(), worktree: plain } as Task;
    const bus = createLifecycleBus({
      builtins: {
        on_cold_start: async () => {
          throw 'not an Error';
        },
      },
      config: NO_COMMANDS,
      groups,
    });
    const failure = await runColdStart(bus, { task: noGit, taskDir, stepName: 'implement', attempt: 1, reason: 'resumed' });
    expect(failure?.error.message).toBe('the builtin OnColdStart hook failed: not an Error');
    expect(failure?.moved).toEqual([]);
    rmSync(plain, { recursive: true, force: true });
  });

  it('says new_workspace until an agent step of the task has started', () => {
    const hook = newHook('task-20260101-000000', 'ws', '2026-01-01T00:00:00Z');
    const started = (index: number) => ({
      ...hook,
      history: [...hook.history, { ...hook.history[0]!, trigger: 'step_start', details: { step_index: index } }],
    });
    expect(coldStartReason(hook, task())).toBe('new_workspace');
    expect(coldStartReason(started(0), task())).toBe('new_workspace');
    expect(coldStartReason(started(1), task())).toBe('resumed');
  });
});

describe('emitTerminate outside a run', () => {
  it("runs the task's OnTerminate hooks in the removed workspace's task folder, and logs them", async () => {
    mkdirSync(join(taskDir, 'inner'));
    const notes: string[] = [];
    const config = defaultConfig();
    config.lifecycle.on_terminate = ['exit 5'];
    await emitTerminate({
      task: task(),
      taskDir: join(taskDir, 'inner'),
      config,
      reason: 'workspace_removed',
      workspace: join(repo, 'gone'),
      verbose: true,
      note: (t) => notes.push(t),
    });
    expect(readFileSync(join(taskDir, 'term.txt'), 'utf8')).toBe(`on_terminate ${join(taskDir, 'inner')}\n`);
    expect(readLifecycleLog(join(taskDir, 'inner')).entries.map((e) => e.outcome)).toEqual(['ok', 'failed']);
    expect(notes[1]).toBe('OnTerminate hook "exit 5" (config) failed: exit code 5');
    await emitTerminate({
      task: { ...task(), lifecycle: undefined } as Task,
      taskDir: join(taskDir, 'inner'),
      config: defaultConfig(),
      reason: 'abandoned',
      builtins: { on_terminate: async () => undefined },
    });
    expect(readLifecycleLog(join(taskDir, 'inner')).entries.at(-1)).toMatchObject({ hook: 'builtin:on_terminate', outcome: 'ok' });
  });
});

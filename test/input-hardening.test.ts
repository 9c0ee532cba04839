// Files read from disk are checked before anything acts on them (issue 8): hook.json against its
// own task.json, task.json itself, config.yaml of any shape, YAML warnings shown as atlas's own.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { parseHook, truncateLongStrings } from '../src/domain/hook-schema.js';
import { parseTask, type TaskFormatError } from '../src/domain/task-schema.js';
import { taskFiles } from '../src/store/paths.js';
import { atlasSync, seedExampleText } from './helpers/core-fixtures.js';
import { ensureBuilt } from './helpers/engine-fixtures.js';
import type { TaskFixture } from './helpers/recovery-fixtures.js';
import {
  cleanupRecoveryFixtures,
  completeSteps,
  deadPid,
  git,
  iso,
  makeRepo,
  makeTask,
  ownerRecord,
  runStep,
  setHook,
  tempHome,
  writeOwnerFile,
} from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;

beforeAll(() => ensureBuilt());
beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

/** A task SIGKILLed while running step 2 (implement): what `atlas recover` acts on. */
async function crashedTask(): Promise<TaskFixture> {
  const f = await makeTask({ home, repo });
  const at = iso(10 * 60_000);
  await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, at), f.task, 1, at, { last_output: 'building' }));
  writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
  return f;
}

const env = () => ({ ATLAS_HOME: home });
const hookText = (f: TaskFixture) => readFileSync(taskFiles(f.ref.dir).hook, 'utf8');
const editHook = (f: TaskFixture, edit: (h: any) => void) => {
  const h = JSON.parse(hookText(f));
  edit(h);
  writeFileSync(taskFiles(f.ref.dir).hook, JSON.stringify(h, null, 2));
};
const branches = () => git(repo, 'branch', '--list', 'atlas/recovery/*');

describe('hook.json is cross-checked with its task', () => {
  it("another task's hook.json is refused by recover and checkpoint (exit 2, field named), nothing changed", async () => {
    const a = await crashedTask();
    const b = await makeTask({ home, repo, workspace: 'other', at: new Date(Date.now() - 30 * 60_000) });
    writeFileSync(taskFiles(a.ref.dir).hook, hookText(b));
    const before = hookText(a);
    for (const args of [
      ['recover', '--task', a.ref.id, '--yes', '--action', 'retry_from_checkpoint'],
      ['checkpoint', 'note', '--task', a.ref.id],
    ]) {
      const r = atlasSync(args, { cwd: repo, env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`task_id is "${b.ref.id}", but the file is in task ${a.ref.id}'s folder`);
      expect(r.stderr).toContain('hint:');
      expect(r.stderr).not.toMatch(/Cannot read|TypeError/);
    }
    expect(hookText(a)).toBe(before);
    expect(branches()).toBe('');
  });

  it('a current_step that task.json does not have is refused before anything is reset or branched', async () => {
    const f = await crashedTask();
    for (const [edit, field] of [
      [(h: any) => (h.current_step.step_index = 7), 'current_step.step_index is 7, but task.json has 4 steps'],
      [(h: any) => (h.current_step.step_name = 'deploy'), 'current_step.step_name is "deploy", but step 1 of task.json is "implement"'],
    ] as const) {
      editHook(f, edit);
      const before = hookText(f);
      const r = atlasSync(['recover', '--task', f.ref.id, '--yes', '--action', 'retry_from_checkpoint'], { cwd: repo, env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(field);
      expect(hookText(f)).toBe(before);
      expect(branches()).toBe('');
      editHook(f, (h) => Object.assign(h.current_step, { step_index: 1, step_name: 'implement' }));
    }
  });

  it('a task_index beyond 2^31-1 is refused (exit 2) before anything is signed', async () => {
    const f = await crashedTask();
    editHook(f, (h) => (h.task_index = 2 ** 31));
    const r = atlasSync(['checkpoint', 'note', '--task', f.ref.id], { cwd: repo, env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('hook.task_index');
    expect(() => parseHook({ ...JSON.parse(seedExampleText()), task_index: 2 ** 31 })).toThrow(/task_index: expected 0\.\.2147483647/);
  });

  it('a 50 MB last_output is cut to 500 characters on read: checkpoint writes a small HOOK.md', async () => {
    const f = await crashedTask();
    editHook(f, (h) => {
      h.current_step.last_output = `${'x'.repeat(50 * 1024 * 1024)}END`;
      h.current_step.working_on = 'w'.repeat(5 * 1024 * 1024);
    });
    // A live owner is not needed for a manual checkpoint with --task.
    const r = atlasSync(['checkpoint', 'still here', '--task', f.ref.id], { cwd: repo, env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(taskFiles(f.ref.dir).hookMarkdown).size).toBeLessThan(100_000);
    const hook = JSON.parse(hookText(f));
    expect(hook.current_step.last_output).toHaveLength(500);
    expect(hook.current_step.last_output.endsWith('END')).toBe(true);
    expect(hook.current_step.working_on.length).toBeLessThanOrEqual(10_001);
    expect(statSync(taskFiles(f.ref.dir).hook).size).toBeLessThan(100_000);
  });

  it('truncateLongStrings cuts only what is too long, and says where', () => {
    const data = { a: 'x'.repeat(20), b: ['ok', 'y'.repeat(30)], c: { d: 'z'.repeat(11) } };
    expect(truncateLongStrings(data, 10)).toEqual(['hook.a', 'hook.b[1]', 'hook.c.d']);
    expect(data).toEqual({ a: `${'x'.repeat(10)}…`, b: ['ok', `${'y'.repeat(10)}…`], c: { d: `${'z'.repeat(10)}…` } });
  });
});

describe('task.json is validated at the edge', () => {
  it('an unknown step type: recover exits 2 naming the file and field, and the hook stays as it was', async () => {
    const f = await crashedTask();
    const task = JSON.parse(readFileSync(taskFiles(f.ref.dir).task, 'utf8'));
    task.steps[1].type = 'teleport';
    writeFileSync(taskFiles(f.ref.dir).task, JSON.stringify(task, null, 2));
    const before = hookText(f);
    const r = atlasSync(['recover', '--task', f.ref.id, '--yes'], { cwd: repo, env: env() });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${taskFiles(f.ref.dir).task} is not a valid task file: steps[1].type: unknown step type "teleport"`);
    expect(r.stderr).not.toContain('Cannot read properties');
    expect(hookText(f)).toBe(before);
    expect(JSON.parse(hookText(f)).state).toBe('step_running');
  });

  it('names the first bad field of each kind', () => {
    const base = {
      schema_version: '1.0',
      id: 'task-20260117-143022',
      workspace_id: 'w',
      template: 't',
      description: 'd',
      created_at: '2026-01-17T14:30:22Z',
      updated_at: '2026-01-17T14:30:22Z',
      status: 'step_running',
      repo_root: '/r',
      worktree: '/r',
      in_place: true,
      branch: 'main',
      steps: [{ name: 'v', type: 'validation', commands: ['true'], max_attempts: 1, on_failure: 'fail' }],
    };
    expect(parseTask(base).id).toBe(base.id);
    const field = (over: Record<string, unknown>) => {
      try {
        parseTask({ ...base, ...over });
      } catch (error) {
        return (error as TaskFormatError).field;
      }
      return 'ok';
    };
    expect(field({ id: '../x' })).toBe('id');
    expect(field({ status: 'dancing' })).toBe('status');
    expect(field({ steps: 'all' })).toBe('steps');
    expect(field({ steps: [{ name: 'a', type: 'ai', max_attempts: 1, on_failure: 'fail' }] })).toBe('steps[0].prompt');
    expect(field({ steps: [{ name: 'a', type: 'git', action: 'rebase', max_attempts: 1, on_failure: 'fail' }] })).toBe('steps[0].action');
    expect(field({ steps: [{ name: 'a', type: 'command', run: [1], max_attempts: 1, on_failure: 'fail' }] })).toBe('steps[0].run');
    expect(field({ steps: [{ name: 'a', type: 'human', prompt: 'ok?', max_attempts: 0, on_failure: 'fail' }] })).toBe(
      'steps[0].max_attempts',
    );
    expect(field({ steps: [{ name: 'a', type: 'human', prompt: 'ok?', max_attempts: 1, on_failure: 'retry' }] })).toBe(
      'steps[0].on_failure',
    );
    expect(field({ task_index: -1 })).toBe('task_index');
    expect(field({ validation_commands: 'npm test' })).toBe('validation_commands');
    expect(field({ in_place: 'yes' })).toBe('in_place');
  });
});

describe('config.yaml of any shape, and durations that make no sense', () => {
  it('a list or a scalar is ignored with a warning; defaults apply', async () => {
    for (const [text, kind] of [
      ['- hooks\n- ai\n', 'a list'],
      ['just text\n', 'text'],
    ] as const) {
      writeFileSync(join(home, 'config.yaml'), text);
      const { config, warnings } = await loadConfig({ home, env: {} });
      expect(warnings.join('\n')).toContain(
        `${join(home, 'config.yaml')}: expected settings by key (like "hooks:" with keys under it), got ${kind}; the file is ignored`,
      );
      expect(config.hooks.max_checkpoints).toBe(50);
    }
  });

  it('heartbeat_interval: 0 and stale_threshold: 1ms warn, naming the key and the value used', async () => {
    writeFileSync(join(home, 'config.yaml'), 'hooks:\n  heartbeat_interval: 0\n  stale_threshold: 1ms\n  checkpoint_interval: 0\n');
    const { config, warnings } = await loadConfig({ home, env: {} });
    expect(config.hooks.heartbeat_interval).toBe(10_000);
    expect(config.hooks.stale_threshold).toBe(300_000);
    expect(config.hooks.checkpoint_interval).toBe(0); // 0 turns interval checkpoints off
    expect(warnings).toContain(
      `${join(home, 'config.yaml')}: invalid hooks.heartbeat_interval: expected at least 1s, got 0; using 10s (the default)`,
    );
    expect(warnings).toContain(
      `${join(home, 'config.yaml')}: invalid hooks.stale_threshold: expected at least 10s, got "1ms"; using 5m (the default)`,
    );
    const env = await loadConfig({ home, env: { ATLAS_HOOKS_STALE_THRESHOLD: '2s' } });
    expect(env.warnings).toContain(
      'environment ATLAS_HOOKS_STALE_THRESHOLD: invalid hooks.stale_threshold: expected at least 10s, got "2s"; using 5m (the default)',
    );
  });

  it('YAML warnings are atlas warnings, not raw (node:PID) lines, also when the parse is cached', () => {
    writeFileSync(join(home, 'config.yaml'), 'hooks:\n  max_checkpoints: !custom 20\n');
    for (let run = 0; run < 2; run++) {
      const r = atlasSync(['config', 'list'], { cwd: repo, env: env() });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`atlas: warning: ${join(home, 'config.yaml')}: Unresolved tag: !custom at line 2, column 20:`);
      expect(r.stderr).not.toContain('(node:');
    }
  });
});

// Orchestration with a fake runner: the directives recovery passes, the hook transitions around
// them, saved work, manual recovery and continuing it later, prompts and task selection.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../src/config/load.js';
import { AtlasError } from '../src/domain/errors.js';
import type { Hook } from '../src/domain/hook.js';
import { transition } from '../src/domain/hook.js';
import type { EntryDirective, TaskOutcome } from '../src/engine/contract.js';
import type { HookManager } from '../src/hook/manager.js';
import { readOwner, startHeartbeat } from '../src/liveness/owner.js';
import type { SelectFn } from '../src/recovery/choose-action.js';
import { actionFromFlags } from '../src/recovery/choose-action.js';
import type { Diagnosis } from '../src/recovery/diagnose.js';
import type { RecoverTaskOptions } from '../src/recovery/recover.js';
import { recoverTask } from '../src/recovery/recover.js';
import { renderDiagnosis, renderRecoveryResult } from '../src/recovery/render.js';
import { selectTaskToRecover } from '../src/recovery/select-task.js';
import { taskFiles } from '../src/store/paths.js';
import type { TaskFixture } from './helpers/recovery-fixtures.js';
import {
  checkpoint,
  cleanupRecoveryFixtures,
  commitAll,
  completeSteps,
  crashedTask,
  deadPid,
  git,
  iso,
  makeRepo,
  makeTask,
  ownerRecord,
  runStep,
  setHook,
  steps,
  tempHome,
  writeOwnerFile,
} from './helpers/recovery-fixtures.js';

let home: string;
let repo: string;
const config = defaultConfig();

beforeEach(() => {
  home = tempHome();
  repo = makeRepo();
});
afterEach(() => cleanupRecoveryFixtures());

/** A crashed task (dead owner) running step `index` since 10 minutes ago. */
const crashedAt = (index: number, f?: TaskFixture, extra = {}) => crashedTask(home, repo, index, f, extra);

interface Seen {
  entry: EntryDirective;
  state: string;
  ownerPid: number | undefined;
  tree: string;
}

/** A fake runner: records what it was given, then plays the runner's part to the end. */
function fakeRunner(f: TaskFixture, play?: (manager: HookManager, entry: EntryDirective) => Promise<TaskOutcome>) {
  const seen: Seen[] = [];
  const resume = async (entry: EntryDirective): Promise<TaskOutcome> => {
    seen.push({
      entry,
      state: f.manager.read().state,
      ownerPid: readOwner(taskFiles(f.ref.dir).owner)?.pid,
      tree: git(repo, 'status', '--porcelain=v1', '-uall'),
    });
    if (play) return play(f.manager, entry);
    return { state: 'completed', exitCode: 0, message: `task ${f.ref.id} completed` };
  };
  return { seen, resume };
}

/** What a real runner does: own the task, move the hook along, finish. */
async function runToEnd(manager: HookManager, entry: EntryDirective, f: TaskFixture): Promise<TaskOutcome> {
  const hb = startHeartbeat(taskFiles(f.ref.dir).owner, { heartbeatIntervalMs: 60_000, staleThresholdMs: 300_000 });
  try {
    let hook: Hook = manager.read();
    const step = hook.current_step!;
    if (entry.kind === 'retry_step') {
      hook = await manager.transition(
        {
          to: 'step_running',
          trigger: 'step_start',
          stepName: step.step_name,
          details: { step_index: step.step_index, attempt: step.attempt + 1 },
        },
        (h) => ({
          ...h,
          current_step: { ...step, attempt: step.attempt + 1, started_at: manager.timestamp() },
        }),
      );
      hook = await manager.transition({
        to: 'step_pending',
        trigger: 'step_complete',
        stepName: step.step_name,
        details: { step_index: step.step_index },
      });
    }
    for (let i = 0; i < f.task.steps.length; i++) {
      const done = hook.history.some((e) => e.trigger === 'step_complete' && e.details?.['step_index'] === i);
      if (done) continue;
      hook = await manager.transition({ to: 'step_running', trigger: 'step_start', details: { step_index: i } });
      hook = await manager.transition({ to: 'step_pending', trigger: 'step_complete', details: { step_index: i } });
    }
    await manager.transition({ to: 'completed', trigger: 'task_complete' });
    return { state: 'completed', exitCode: 0, message: `task ${f.ref.id} completed` };
  } finally {
    hb.stop();
  }
}

function options(f: TaskFixture, resume: RecoverTaskOptions['resume'], over: Partial<RecoverTaskOptions> = {}): RecoverTaskOptions {
  return { ref: f.ref, config, resume, manager: f.manager, ...over };
}

describe('recoverTask', () => {
  it('retry_step of an idempotent step: resumes with a note, the hook in recovering and owned by this process', async () => {
    const f = await crashedAt(0, undefined, { working_on: 'reading parseConfig' });
    const runner = fakeRunner(f, (m, e) => runToEnd(m, e, f));
    const result = await recoverTask(options(f, runner.resume));
    expect(runner.seen).toHaveLength(1);
    const [seen] = runner.seen;
    expect(seen!.state).toBe('recovering');
    expect(seen!.ownerPid).toBe(process.pid);
    expect(seen!.entry.kind).toBe('retry_step');
    const note = (seen!.entry as { note: string }).note;
    expect(note).toContain('"analyze", attempt 1/3');
    expect(note).toContain('reading parseConfig');
    expect(note).toContain('halfway through');
    expect(note).toContain('git status');
    expect(result).toMatchObject({
      action: 'retry_step',
      action_source: 'recommended',
      state: 'completed',
      exit_code: 0,
      saved_work: null,
    });
    expect(result.diagnosis).toMatchObject({ kind: 'crash', crash_type: 'signal', step: { name: 'analyze', attempt: 1 } });
    expect(f.manager.read().state).toBe('completed');
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
    expect(renderRecoveryResult(result)).toContain('Outcome        completed');
  });

  it('between steps: the hook goes back to step_pending and the run continues', async () => {
    const f = await makeTask({ home, repo });
    await setHook(f, (h) => completeSteps(h, f.task, 2, iso(600_000)));
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const runner = fakeRunner(f, (m, e) => runToEnd(m, e, f));
    const result = await recoverTask(options(f, runner.resume, { action: 'retry_step' }));
    expect(runner.seen.map((s) => [s.entry, s.state])).toEqual([[{ kind: 'continue' }, 'step_pending']]);
    const triggers = f.manager.read().history.map((e) => `${e.trigger}:${e.to_state}`);
    expect(triggers).toContain('crash_detected:recovering');
    expect(triggers).toContain('recovery_continue:step_pending');
    expect(result.diagnosis.next_step).toEqual({ name: 'validate', index: 2 });
    expect(result.state).toBe('completed');
  });

  it('between steps, skip_step and retry_from_checkpoint are refused with what to do instead', async () => {
    const f = await makeTask({ home, repo });
    await setHook(f, (h) => completeSteps(h, f.task, 1, iso(600_000)));
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const runner = fakeRunner(f);
    const error = await recoverTask(options(f, runner.resume, { action: 'skip_step' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtlasError);
    expect((error as AtlasError).exitCode).toBe(2);
    expect((error as AtlasError).message).toContain('"implement", which never ran');
    expect((error as AtlasError).hint).toContain('--action retry_step');
    expect(runner.seen).toHaveLength(0);
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
  });

  it("retry_from_checkpoint: saves the work, resets to the checkpoint's commit, resumes from it", async () => {
    const f = await crashedAt(1);
    writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 2; // committed by the agent\n');
    const sha = commitAll(repo, 'agent: first part');
    const ckpt = checkpoint({ step_index: 1, created_at: iso(5 * 60_000), git_commit: sha, description: 'first part' });
    await setHook(f, (h) => ({ ...h, checkpoints: [ckpt] }));
    // Work after the checkpoint: a later commit, an edit, an untracked file.
    writeFileSync(join(repo, 'README.md'), '# demo, later commit\n');
    const later = commitAll(repo, 'agent: second part');
    writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 3; // uncommitted\n');
    writeFileSync(join(repo, 'scratch.txt'), 'untracked notes\n');

    const lines: string[] = [];
    const runner = fakeRunner(f);
    const result = await recoverTask(options(f, runner.resume, { log: (l) => lines.push(l) }));
    expect(result.action).toBe('retry_from_checkpoint');
    expect(result.reset_to).toEqual({ checkpoint_id: ckpt.checkpoint_id, commit: sha });
    const saved = result.saved_work!;
    if (!saved.saved) throw new Error('expected saved work');
    expect(saved.branch).toMatch(new RegExp(`^atlas/recovery/${f.ref.id}/\\d{8}-\\d{6}$`));
    // When the runner was called, the tree was at the checkpoint, clean.
    expect(runner.seen[0]!.tree).toBe('');
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(sha);
    expect(runner.seen[0]!.entry).toMatchObject({ kind: 'retry_step', fromCheckpoint: ckpt.checkpoint_id });
    expect((runner.seen[0]!.entry as { note: string }).note).toContain(saved.branch);
    // Nothing lost: the saved branch has the uncommitted edit, the untracked file and the later commit.
    expect(git(repo, 'show', `${saved.branch}:src/app.ts`)).toContain('uncommitted');
    expect(git(repo, 'show', `${saved.branch}:scratch.txt`)).toBe('untracked notes');
    expect(git(repo, 'merge-base', '--is-ancestor', later, saved.branch)).toBe('');
    expect(lines.join('\n')).toContain(`checkout ${saved.branch} -- .`);
    expect(lines.join('\n')).toContain(`Reset ${repo} to checkpoint ${ckpt.checkpoint_id}`);
    const history = f.manager.read().history;
    expect(history.find((e) => e.trigger === 'work_saved')?.details).toMatchObject({
      branch: saved.branch,
      commit: saved.commit,
      files: 2,
    });
    expect(history.find((e) => e.trigger === 'checkpoint_restored')?.details).toEqual({ checkpoint_id: ckpt.checkpoint_id, commit: sha });
    const md = readFileSync(taskFiles(f.ref.dir).hookMarkdown, 'utf8');
    expect(md).toContain('## Saved work');
    expect(md).toContain(`checkout ${saved.branch} -- .`);
    expect(renderRecoveryResult(result)).toContain(`Saved work     branch ${saved.branch}`);
  });

  it("skip_step when the step's commit exists: the runner is told to record it complete", async () => {
    const f = await makeTask({ home, repo, steps: [steps.implement(), steps.commit(), steps.validate()] });
    await setHook(f, (h) => runStep(completeSteps(h, f.task, 1, iso(120_000)), f.task, 1, iso(60_000)));
    writeFileSync(join(repo, 'src', 'app.ts'), 'export const a = 9;\n');
    commitAll(repo, 'fix');
    writeOwnerFile(f.ref, ownerRecord({ pid: deadPid() }));
    const runner = fakeRunner(f);
    const result = await recoverTask(options(f, runner.resume));
    expect(result.action).toBe('skip_step');
    expect(runner.seen[0]!.entry.kind).toBe('skip_step');
    expect((runner.seen[0]!.entry as { note: string }).note).toMatch(/^skipped by atlas recover: Step "commit" had finished its work/);
  });

  it('manual: the hook waits in awaiting_human with instructions; `--action` continues it later', async () => {
    const f = await crashedAt(1);
    const runner = fakeRunner(f, (m, e) => runToEnd(m, e, f));
    const manual = await recoverTask(options(f, runner.resume));
    expect(runner.seen).toHaveLength(0);
    expect(manual).toMatchObject({ action: 'manual', exit_code: 5, state: 'awaiting_human' });
    // No checkpoint with a commit: retry_from_checkpoint is not offered.
    expect(manual.message).toContain(`atlas recover --task ${f.ref.id} --action retry_step|skip_step\``);
    expect(manual.message).toContain(`The working tree is ${repo}.`);
    const hook = f.manager.read();
    expect(hook.history[hook.history.length - 1]).toMatchObject({
      from_state: 'recovering',
      to_state: 'awaiting_human',
      trigger: 'manual_recovery_required',
    });
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
    const md = readFileSync(taskFiles(f.ref.dir).hookMarkdown, 'utf8');
    expect(md).toContain(`atlas recover --task ${f.ref.id} --action retry_step`);
    expect(md).toContain('a person has to decide how to go on');
    expect(md).toContain('Diagnosis: Step "implement"');

    // --yes again changes nothing: the recommendation is still manual.
    const again = await recoverTask(options(f, runner.resume));
    expect(again).toMatchObject({ action: 'manual', exit_code: 5, state: 'awaiting_human' });
    expect(again.diagnosis).toMatchObject({ kind: 'paused', paused_by: 'manual_recovery_required', fresh: false });

    const resumed = await recoverTask(options(f, runner.resume, { action: 'retry_step' }));
    expect(runner.seen).toHaveLength(1);
    expect(runner.seen[0]).toMatchObject({ state: 'awaiting_human', entry: { kind: 'retry_step' } });
    expect(resumed).toMatchObject({ action: 'retry_step', action_source: 'flag', state: 'completed', exit_code: 0 });
    const triggers = f.manager.read().history.map((e) => e.trigger);
    expect(triggers.filter((t) => t === 'crash_detected')).toHaveLength(1);
  });

  it('after Ctrl+C (awaiting_human, interrupted) recover continues the step', async () => {
    const f = await makeTask({ home, repo });
    const at = iso(60_000);
    await setHook(f, (h) =>
      transition(runStep(completeSteps(h, f.task, 1, at), f.task, 1, at), {
        to: 'awaiting_human',
        trigger: 'interrupted',
        at,
        details: { reason: 'SIGINT' },
      }),
    );
    const runner = fakeRunner(f);
    const result = await recoverTask(options(f, runner.resume, { action: 'retry_step' }));
    expect(result.diagnosis).toMatchObject({ kind: 'paused', paused_by: 'interrupted' });
    expect((runner.seen[0]!.entry as { note: string }).note).toContain('was interrupted (Ctrl+C or SIGTERM)');
  });

  it("surfaces the runner's outcome when the retry goes past max_attempts", async () => {
    const f = await crashedAt(0, undefined, { attempt: 3, max_attempts: 3 });
    const runner = fakeRunner(f, async (m) => {
      await m.transition({ to: 'failed', trigger: 'attempts_exhausted' });
      return { state: 'failed', exitCode: 1, message: 'step "analyze" failed: 3 of 3 attempts used' };
    });
    const result = await recoverTask(options(f, runner.resume, { action: 'retry_step' }));
    expect(result).toMatchObject({ state: 'failed', exit_code: 1, message: 'step "analyze" failed: 3 of 3 attempts used' });
    // analyze is idempotent: retried even on its last attempt (a crash is not a failure)
    expect(result.diagnosis.recovery.recommended_action).toBe('retry_step');
  });

  it('aborting at the prompt leaves the task recovering, unowned, for a later `atlas recover`', async () => {
    const f = await crashedAt(0);
    const runner = fakeRunner(f);
    const result = await recoverTask(options(f, runner.resume, { choose: async () => undefined }));
    expect(result).toMatchObject({ action: null, action_source: 'aborted', exit_code: 5 });
    expect(result.message).toContain(`atlas recover --task ${f.ref.id}`);
    expect(runner.seen).toHaveLength(0);
    expect(f.manager.read().state).toBe('recovering');
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
    expect(renderRecoveryResult(result)).toBe(result.message);
  });

  it('a runner that throws still releases the task', async () => {
    const f = await crashedAt(0);
    const error = await recoverTask(
      options(f, async () => {
        throw new Error('boom');
      }),
    ).catch((e: unknown) => e);
    expect((error as Error).message).toBe('boom');
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
  });
});

describe('choosing the action', () => {
  function fakeSelect(
    answer: (config: {
      choices: { value: unknown; name: string; disabled?: unknown; description?: string }[];
      default?: unknown;
    }) => unknown,
  ) {
    const calls: unknown[] = [];
    const select = (async (config: never) => {
      calls.push(config);
      return answer(config);
    }) as unknown as SelectFn;
    return { select, calls };
  }

  it('asks with the recommendation preselected, all four actions and abort, unavailable ones disabled', async () => {
    const f = await crashedAt(0);
    const { select, calls } = fakeSelect((c) => c.default);
    const flags = actionFromFlags({ interactive: true, select });
    const runner = fakeRunner(f);
    let shown = '';
    const result = await recoverTask(options(f, runner.resume, { ...flags, onDiagnosis: (d: Diagnosis) => (shown = renderDiagnosis(d)) }));
    const config = calls[0] as { choices: { value: string; name: string; disabled?: string }[]; default: string };
    expect(config.default).toBe('retry_step');
    expect(config.choices.map((c) => c.value)).toEqual(['retry_step', 'retry_from_checkpoint', 'skip_step', 'manual', 'abort']);
    expect(config.choices[0]!.name).toBe('retry_step (recommended)');
    expect(config.choices[1]!.disabled).toBe('no checkpoint has a commit to return to');
    expect(result).toMatchObject({ action: 'retry_step', action_source: 'chosen' });
    expect(shown).toContain(`Task ${f.ref.id} crashed.`);
    expect(shown).toContain('Recommended: retry_step.');
    expect(shown).toContain('▸ retry_step');
    expect(shown).toContain(`atlas/recovery/${f.ref.id}/<YYYYMMDD-HHMMSS>`);
    expect(shown).toContain('│ halfway through');
  });

  it('--action is validated; without a terminal, --yes or --action is required', async () => {
    expect(() => actionFromFlags({ interactive: false, action: 'retry' })).toThrow(/unknown recovery action "retry"/);
    expect(actionFromFlags({ interactive: false, action: 'skip_step' })).toEqual({ action: 'skip_step' });
    expect(actionFromFlags({ interactive: false, yes: true })).toEqual({});
    const f = await crashedAt(0);
    const runner = fakeRunner(f);
    const error = await recoverTask(options(f, runner.resume, actionFromFlags({ interactive: false }))).catch((e: unknown) => e);
    expect((error as AtlasError).exitCode).toBe(2);
    expect((error as AtlasError).hint).toContain('--yes');
    expect(f.manager.read().state).toBe('recovering');
    expect(existsSync(taskFiles(f.ref.dir).owner)).toBe(false);
  });
});

describe('selecting the task', () => {
  it('one crashed task is picked; several are listed (exit 4 naming --task) or asked about', async () => {
    await expect(selectTaskToRecover({ home, cwd: repo, interactive: false })).rejects.toThrow(/no crashed or interrupted task/);
    const a = await crashedAt(0);
    expect((await selectTaskToRecover({ home, cwd: repo, interactive: false }))?.id).toBe(a.ref.id);
    const b = await crashedAt(1, await makeTask({ home, repo, workspace: 'second' }));
    const error = await selectTaskToRecover({ home, cwd: repo, interactive: false }).catch((e: unknown) => e);
    expect((error as AtlasError).exitCode).toBe(4);
    expect((error as AtlasError).message).toContain('2 tasks need recovery');
    expect((error as AtlasError).message).toContain(a.ref.id);
    expect((error as AtlasError).message).toContain(b.ref.id);
    expect((error as AtlasError).hint).toContain('--task');
    const select = (async (config: { choices: { value: unknown }[] }) => config.choices[1]!.value) as unknown as SelectFn;
    expect((await selectTaskToRecover({ home, cwd: repo, interactive: true, select }))?.id).toBe(b.ref.id);
    expect((await selectTaskToRecover({ home, cwd: repo, interactive: false, taskId: a.ref.id }))?.id).toBe(a.ref.id);
  });
});

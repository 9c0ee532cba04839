// Unit tests of the pure recovery rules (seed 003 recovery_test scenarios, issue 3 §1-3): crash
// detection (judgeCrash) and the recommendation for a crashed hook (diagnoseCrash).
import { describe, expect, it } from 'vitest';
import type { StepCheckpoint } from '../src/domain/checkpoint.js';
import { newHook, transition } from '../src/domain/hook.js';
import { parseHook } from '../src/domain/hook-schema.js';
import { HOOK_STATES } from '../src/domain/hook-state.js';
import { diagnoseCrash, judgeCrash, mayCrash, NO_OWNER_GRACE_MS, stepPosition } from '../src/domain/recovery-rules.js';
import { at, between, ckpt, diagnose, idx, NOW, running, STEPS, T0 } from './helpers/recovery-rules-fixtures.js';

describe('crash detection (judgeCrash)', () => {
  const now = T0 + 60 * 60_000;
  const old = at(0);
  const recent = new Date(now - 2_000).toISOString();

  it('never judges a terminal hook crashed, whatever the owner', () => {
    for (const state of ['completed', 'failed', 'abandoned'] as const) {
      for (const liveness of ['gone', 'stale', 'none', 'alive'] as const) {
        expect(judgeCrash({ state, updatedAt: old, liveness, now })).toEqual({ crashed: false, why: 'ended' });
      }
    }
  });

  it('never judges awaiting_human crashed: it waits for a person', () => {
    for (const liveness of ['gone', 'stale', 'none'] as const) {
      expect(judgeCrash({ state: 'awaiting_human', updatedAt: old, liveness, now })).toEqual({ crashed: false, why: 'waiting' });
    }
  });

  it('a live owner (or one beating from another host) is running, however old the hook', () => {
    expect(judgeCrash({ state: 'step_running', updatedAt: old, liveness: 'alive', now })).toEqual({ crashed: false, why: 'running' });
    expect(judgeCrash({ state: 'step_running', updatedAt: old, liveness: 'remote', now })).toEqual({ crashed: false, why: 'running' });
  });

  it('owner gone → signal; heartbeat stale → timeout, in every state that can crash', () => {
    const crashable = HOOK_STATES.filter(mayCrash);
    expect(crashable).toEqual(['initializing', 'step_pending', 'step_running', 'step_validating', 'recovering']);
    for (const state of crashable) {
      expect(judgeCrash({ state, updatedAt: recent, liveness: 'gone', now })).toEqual({
        crashed: true,
        crashType: 'signal',
        verdict: 'gone',
      });
      expect(judgeCrash({ state, updatedAt: recent, liveness: 'stale', now })).toEqual({
        crashed: true,
        crashType: 'timeout',
        verdict: 'stale',
      });
    }
  });

  it('no owner.json → unknown, but only once the hook is older than the grace period', () => {
    expect(judgeCrash({ state: 'step_running', updatedAt: old, liveness: 'none', now })).toEqual({
      crashed: true,
      crashType: 'unknown',
      verdict: 'none',
    });
    expect(judgeCrash({ state: 'initializing', updatedAt: recent, liveness: 'none', now })).toEqual({ crashed: false, why: 'starting' });
    const edge = new Date(now - NO_OWNER_GRACE_MS).toISOString();
    expect(judgeCrash({ state: 'step_pending', updatedAt: edge, liveness: 'none', now }).crashed).toBe(false);
    const past = new Date(now - NO_OWNER_GRACE_MS - 1000).toISOString();
    expect(judgeCrash({ state: 'step_pending', updatedAt: past, liveness: 'none', now }).crashed).toBe(true);
    expect(judgeCrash({ state: 'step_pending', updatedAt: recent, liveness: 'none', now, graceMs: 1000 }).crashed).toBe(true);
  });

  it('a recovering hook without an owner is an unfinished recovery, with no grace', () => {
    expect(judgeCrash({ state: 'recovering', updatedAt: recent, liveness: 'none', now })).toEqual({
      crashed: true,
      crashType: 'unknown',
      verdict: 'none',
    });
  });
});

describe('recommendation (diagnoseCrash)', () => {
  it('idempotent steps (analyze, plan, validation, marked) → retry_step', () => {
    for (const name of ['analyze', 'plan', 'validate', 'generate']) {
      const r = diagnose(running(name));
      expect(r.recommended_action, name).toBe('retry_step');
      expect(r.reason).toContain('idempotent');
    }
    expect(diagnose(running('generate')).reason).toContain('template marks it idempotent');
    expect(diagnose(running('validate')).reason).toContain('validates');
  });

  it('a step named like analysis but marked idempotent: false is not retried blindly', () => {
    const steps = STEPS.map((s) => (s.name === 'analyze' ? { ...s, idempotent: false } : s));
    expect(diagnoseCrash({ hook: running('analyze'), steps, liveness: 'gone', now: NOW }).recommended_action).toBe('manual');
  });

  it('non-idempotent steps (implement, a command, a commit) cut off with no checkpoint → manual', () => {
    for (const name of ['implement', 'build', 'commit']) {
      const r = diagnose(running(name));
      expect(r.recommended_action, name).toBe('manual');
      expect(r.reason).toContain('no checkpoint since it started');
      expect(r.reason).toContain('git status');
    }
  });

  it('a recent clean checkpoint of the step with a commit → retry_from_checkpoint, naming it', () => {
    const c = ckpt({ step_index: idx('implement'), created_at: at(15) });
    const r = diagnose({ ...running('implement'), checkpoints: [c] });
    expect(r.recommended_action).toBe('retry_from_checkpoint');
    expect(r.last_checkpoint_id).toBe(c.checkpoint_id);
    expect(r.reason).toContain('abc123def456');
    expect(r.reason).toContain('atlas/recovery/');
  });

  it('the newest qualifying checkpoint wins', () => {
    const a = ckpt({ checkpoint_id: 'ckpt-00000001', step_index: idx('implement'), created_at: at(12) });
    const b = ckpt({ checkpoint_id: 'ckpt-00000002', step_index: idx('implement'), created_at: at(14), git_commit: 'fed'.padEnd(40, '0') });
    const dirty = ckpt({ checkpoint_id: 'ckpt-00000003', step_index: idx('implement'), created_at: at(16), git_dirty: true });
    expect(diagnose({ ...running('implement'), checkpoints: [a, b, dirty] }).last_checkpoint_id).toBe('ckpt-00000002');
  });

  it('checkpoints that cannot bring the step back do not count: before the start, dirty, no commit, another step', () => {
    const i = idx('implement');
    const cases: [string, StepCheckpoint][] = [
      ['before start', ckpt({ step_index: i, created_at: at(5) })],
      ['dirty', ckpt({ step_index: i, created_at: at(15), git_dirty: true })],
      [
        'no commit',
        (() => {
          const c = ckpt({ step_index: i, created_at: at(15) });
          delete c.git_commit;
          return c;
        })(),
      ],
      ['other step', ckpt({ step_index: idx('plan'), created_at: at(15) })],
    ];
    for (const [label, c] of cases) {
      const r = diagnose({ ...running('implement'), checkpoints: [c] });
      expect(r.recommended_action, label).toBe('manual');
    }
    const dirty = diagnose({ ...running('implement'), checkpoints: [cases[1]![1]] });
    expect(dirty.reason).toContain('uncommitted changes');
  });

  it('a checkpoint of an earlier attempt does not count for the current attempt', () => {
    const hook = running('implement', { attempt: 2, started_at: at(20) });
    const c = ckpt({ step_index: idx('implement'), created_at: at(15) });
    expect(diagnose({ ...hook, checkpoints: [c] }).recommended_action).toBe('manual');
  });

  it('idempotent steps prefer retry_step over a checkpoint: they need no reset', () => {
    const c = ckpt({ step_index: idx('analyze'), created_at: at(15) });
    const r = diagnose({ ...running('analyze'), checkpoints: [c] });
    expect(r.recommended_action).toBe('retry_step');
    expect(r.last_checkpoint_id).toBe(c.checkpoint_id);
  });

  it('finished work beats everything else → skip_step with the evidence', () => {
    const c = ckpt({ step_index: idx('implement'), created_at: at(15) });
    const r = diagnose({ ...running('implement'), checkpoints: [c] }, { finishedWork: { evidence: 'commit 1a2b3c was made at 14:50' } });
    expect(r.recommended_action).toBe('skip_step');
    expect(r.reason).toContain('commit 1a2b3c');
    expect(r.reason).toContain('moves on to "validate"');
    expect(diagnose(running('approve'), { finishedWork: { evidence: 'x' } }).reason).toContain('finishes the task');
  });

  it('a step that changes things on its last attempt → manual: a retry would fail the task', () => {
    const r = diagnose({
      ...running('implement', { attempt: 3, max_attempts: 3 }),
      checkpoints: [ckpt({ step_index: idx('implement'), created_at: at(15) })],
    });
    expect(r.recommended_action).toBe('manual');
    expect(r.reason).toContain('last attempt (attempt 3/3)');
    expect(diagnose(running('implement', { attempt: 3, max_attempts: 3 }), { finishedWork: { evidence: 'e' } }).recommended_action).toBe(
      'skip_step',
    );
  });

  it('an idempotent step cut off on its last attempt → retry_step: a crash is not a failure, rerunning is safe', () => {
    for (const [name, attempt] of [
      ['analyze', 3],
      ['validate', 1],
    ] as const) {
      const r = diagnose(running(name, { attempt, max_attempts: attempt }));
      expect(r.recommended_action, name).toBe('retry_step');
      expect(r.reason, name).toContain('idempotent');
    }
  });

  it('a human approval step → retry_step (asking again is safe)', () => {
    expect(diagnose(running('approve')).recommended_action).toBe('retry_step');
  });

  it('between steps → retry_step that continues with the next step (never skip_step)', () => {
    const r = diagnose(between(2));
    expect(r.recommended_action).toBe('retry_step');
    expect(r.reason).toContain('between steps after "plan" completed');
    expect(r.reason).toContain('next step, "implement"');
    expect(r.was_validating).toBe(false);
    expect(r.partial_output).toBeUndefined();
  });

  it('crashed in initializing → continue with the first step', () => {
    const hook = newHook('task-20260117-143000', 'demo', at(0));
    const r = diagnose(hook, { liveness: 'none' });
    expect(r).toMatchObject({ recommended_action: 'retry_step', last_known_state: 'initializing', crash_type: 'unknown' });
    expect(r.reason).toContain('"analyze"');
  });

  it('every step done, crashed before completing → continue completes it', () => {
    expect(diagnose(between(STEPS.length)).reason).toContain('every step done');
  });

  it('a current_step already recorded complete is not a running step', () => {
    const h = running('plan');
    const done = {
      ...transition(h, { to: 'step_pending', trigger: 'step_complete', at: at(11), details: { step_index: idx('plan') } }),
      state: 'step_running' as const,
    };
    expect(stepPosition(done, STEPS)).toEqual({ kind: 'between', next: idx('plan') + 1 });
  });

  it('a missing working tree → manual once a step has run', () => {
    const r = diagnose(running('analyze'), { worktreePresent: false });
    expect(r.recommended_action).toBe('manual');
    expect(r.reason).toContain('working tree is missing');
  });

  it('a missing working tree before any step ran (setup cut off) → retry_step, which creates it', () => {
    const setup = newHook('task-20260117-143000', 'demo', at(0));
    const r = diagnose(setup, { worktreePresent: false });
    expect(r.recommended_action).toBe('retry_step');
    expect(r.reason).toContain('while it was being set up');
    expect(r.last_known_state).toBe('initializing');
    const pending = transition(setup, { to: 'step_pending', trigger: 'setup_complete', at: at(0) });
    expect(diagnose(pending, { worktreePresent: false }).recommended_action).toBe('retry_step');
  });

  it('the last attempt: the reason says a retry gets one extra attempt', () => {
    const r = diagnose(running('implement', { attempt: 3, max_attempts: 3 }));
    expect(r.recommended_action).toBe('manual');
    expect(r.reason).toContain('one extra attempt: if it fails, the task fails');
  });

  it('each crash type comes from the liveness verdict', () => {
    expect(diagnose(running('analyze'), { liveness: 'gone' }).crash_type).toBe('signal');
    expect(diagnose(running('analyze'), { liveness: 'stale' }).crash_type).toBe('timeout');
    expect(diagnose(running('analyze'), { liveness: 'none' }).crash_type).toBe('unknown');
  });

  it('fills the whole context on detection (validating, command, partial output ≤ 500, checkpoint)', () => {
    const long = `${'x'.repeat(600)}THE END`;
    const c = ckpt({ step_index: idx('analyze'), created_at: at(2) });
    const hook = { ...running('validate', { working_on: 'npm run lint', last_output: long }, 'step_validating'), checkpoints: [c] };
    const r = diagnose(hook);
    expect(r).toMatchObject({
      detected_at: NOW,
      crash_type: 'signal',
      last_known_state: 'step_validating',
      was_validating: true,
      validation_cmd: 'npm run lint',
      recommended_action: 'retry_step',
      last_checkpoint_id: c.checkpoint_id,
    });
    expect(r.partial_output).toHaveLength(500);
    expect(r.partial_output!.endsWith('THE END')).toBe(true);
    expect(r.reason.length).toBeGreaterThan(20);
    // The context is valid hook.json content.
    const parsed = parseHook(JSON.parse(JSON.stringify({ ...hook, state: 'recovering', recovery: r })));
    expect(parsed.recovery).toEqual(r);
  });

  it('validation_cmd is only set while validating', () => {
    const r = diagnose(running('implement', { working_on: 'adding nil checks', last_output: 'done with Server' }));
    expect(r.was_validating).toBe(false);
    expect(r.validation_cmd).toBeUndefined();
    expect(r.partial_output).toBe('done with Server');
  });
});

// Unit tests of the pure recovery rules (seed 003 recovery_test scenarios, issue 3 §1-3): finished
// work found in the hook, paused hooks, and the checkpoint a recovery returns to.
import { describe, expect, it } from 'vitest';
import type { Hook } from '../src/domain/hook.js';
import { transition } from '../src/domain/hook.js';
import type { StepPosition } from '../src/domain/recovery-rules.js';
import {
  checkpointToReturnTo,
  finishedWorkInHook,
  isRecoverablePause,
  lastKnownState,
  stepPosition,
} from '../src/domain/recovery-rules.js';
import { at, ckpt, diagnose, idx, inStep, receipt, running, STEPS } from './helpers/recovery-rules-fixtures.js';

describe('finished work found in the hook', () => {
  it('a step_complete checkpoint of this attempt proves the step finished', () => {
    const hook = {
      ...running('implement'),
      checkpoints: [ckpt({ step_index: idx('implement'), created_at: at(20), trigger: 'step_complete', checkpoint_id: 'ckpt-deadbeef' })],
    };
    expect(finishedWorkInHook(hook, inStep(hook))?.evidence).toContain('ckpt-deadbeef');
    const older = {
      ...running('implement'),
      checkpoints: [ckpt({ step_index: idx('implement'), created_at: at(5), trigger: 'step_complete' })],
    };
    expect(finishedWorkInHook(older, inStep(older))).toBeUndefined();
  });

  it('a validation step finished when every command has a passing receipt since the step started', () => {
    const hook = running('validate');
    const pass = { ...hook, receipts: [receipt({}), receipt({ receipt_id: 'rcpt-00000002', command: 'npm run lint' })] };
    expect(finishedWorkInHook(pass, inStep(pass))?.evidence).toContain('all 2 validation commands passed');
    const oneFailed = { ...hook, receipts: [receipt({}), receipt({ receipt_id: 'rcpt-00000002', command: 'npm run lint', exit_code: 1 })] };
    expect(finishedWorkInHook(oneFailed, inStep(oneFailed))).toBeUndefined();
    const missing = { ...hook, receipts: [receipt({})] };
    expect(finishedWorkInHook(missing, inStep(missing))).toBeUndefined();
    const beforeStart = {
      ...hook,
      receipts: [receipt({ started_at: at(5) }), receipt({ receipt_id: 'rcpt-00000002', command: 'npm run lint' })],
    };
    expect(finishedWorkInHook(beforeStart, inStep(beforeStart))).toBeUndefined();
    const failedThenPassed = {
      ...hook,
      receipts: [
        receipt({ exit_code: 2 }),
        receipt({ receipt_id: 'rcpt-00000003' }),
        receipt({ receipt_id: 'rcpt-00000002', command: 'npm run lint' }),
      ],
    };
    expect(finishedWorkInHook(failedThenPassed, inStep(failedThenPassed))).toBeDefined();
  });

  it('a validation step with no commands of its own uses the configured ones; unknown commands prove nothing', () => {
    const steps = STEPS.map((s) => (s.type === 'validation' ? { ...s, commands: [] } : s));
    const hook = { ...running('validate'), receipts: [receipt({ command: 'make check' })] };
    const pos = stepPosition(hook, steps) as Extract<StepPosition, { kind: 'in_step' }>;
    expect(finishedWorkInHook(hook, pos)).toBeUndefined();
    expect(finishedWorkInHook(hook, pos, ['make check'])?.evidence).toContain('rcpt-00000001');
  });
});

describe('paused hooks and checkpoints to return to', () => {
  it('an interrupted hook is a recoverable pause whose last known state is the step it left', () => {
    const h = transition(running('implement'), { to: 'awaiting_human', trigger: 'interrupted', at: at(20), details: { reason: 'SIGINT' } });
    expect(isRecoverablePause(h)).toBe(true);
    expect(lastKnownState(h)).toBe('step_running');
    expect(stepPosition(h, STEPS).kind).toBe('in_step');
    const approval = transition(running('approve'), { to: 'awaiting_human', trigger: 'approval_requested', at: at(20) });
    expect(isRecoverablePause(approval)).toBe(false);
  });

  it('after a manual recovery the last known state is the one before the crash', () => {
    let h: Hook = transition(running('implement'), { to: 'recovering', trigger: 'crash_detected', at: at(20) });
    h = { ...h, recovery: diagnose(running('implement')) };
    h = transition(h, { to: 'awaiting_human', trigger: 'manual_recovery_required', at: at(21) });
    expect(isRecoverablePause(h)).toBe(true);
    expect(lastKnownState(h)).toBe('step_running');
  });

  it("an explicit retry_from_checkpoint returns to the step's checkpoint, else the newest clean one, else any with a commit", () => {
    const own = ckpt({ checkpoint_id: 'ckpt-00000001', step_index: idx('implement'), created_at: at(15) });
    const earlier = ckpt({ checkpoint_id: 'ckpt-00000002', step_index: idx('plan'), created_at: at(2) });
    const dirty = ckpt({ checkpoint_id: 'ckpt-00000003', step_index: idx('implement'), created_at: at(16), git_dirty: true });
    const hook = running('implement');
    expect(checkpointToReturnTo({ ...hook, checkpoints: [earlier, own, dirty] }, STEPS)?.checkpoint_id).toBe('ckpt-00000001');
    expect(checkpointToReturnTo({ ...hook, checkpoints: [earlier, dirty] }, STEPS)?.checkpoint_id).toBe('ckpt-00000002');
    expect(checkpointToReturnTo({ ...hook, checkpoints: [dirty] }, STEPS)?.checkpoint_id).toBe('ckpt-00000003');
    expect(checkpointToReturnTo({ ...hook, checkpoints: [earlier, dirty] }, STEPS, 'ckpt-00000003')?.checkpoint_id).toBe('ckpt-00000003');
    expect(checkpointToReturnTo({ ...hook, checkpoints: [] }, STEPS)).toBeUndefined();
  });
});

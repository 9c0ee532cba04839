// Hooks, checkpoints and receipts at fixed times for the unit tests of the pure recovery rules.
import type { StepCheckpoint } from '../../src/domain/checkpoint.js';
import type { Hook } from '../../src/domain/hook.js';
import { newHook, transition } from '../../src/domain/hook.js';
import type { HookState } from '../../src/domain/hook-state.js';
import type { ValidationReceipt } from '../../src/domain/receipt.js';
import type { RecoveryInput, StepPosition } from '../../src/domain/recovery-rules.js';
import { diagnoseCrash, stepPosition } from '../../src/domain/recovery-rules.js';
import type { StepContext } from '../../src/domain/step-context.js';
import type { StepDefinition } from '../../src/domain/template.js';

export const T0 = Date.parse('2026-01-17T14:30:00Z');
export const at = (min: number) => new Date(T0 + min * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
export const NOW = at(30);

export const base = { max_attempts: 3, on_failure: 'fail' as const };
export const STEPS: StepDefinition[] = [
  { ...base, name: 'analyze', type: 'ai', prompt: 'a' },
  { ...base, name: 'plan', type: 'ai', prompt: 'p' },
  { ...base, name: 'implement', type: 'ai', prompt: 'i' },
  { ...base, name: 'validate', type: 'validation', commands: ['npm test', 'npm run lint'] },
  { ...base, name: 'commit', type: 'git', action: 'commit' },
  { ...base, name: 'build', type: 'command', run: ['make'] },
  { ...base, name: 'generate', type: 'command', run: ['make gen'], idempotent: true },
  { ...base, name: 'approve', type: 'human', prompt: 'ok?' },
];
export const idx = (name: string) => STEPS.findIndex((s) => s.name === name);

/** A hook whose steps before `index` completed at minute 1, with step `index` running since minute 10. */
export function running(name: string, extra: Partial<StepContext> = {}, state: HookState = 'step_running'): Hook {
  const index = idx(name);
  let h = transition(newHook('task-20260117-143000', 'demo', at(0)), { to: 'step_pending', trigger: 'setup_complete', at: at(0) });
  for (let i = 0; i < index; i++) {
    h = transition(h, { to: 'step_running', trigger: 'step_start', at: at(1), stepName: STEPS[i]!.name, details: { step_index: i } });
    h = transition(h, { to: 'step_pending', trigger: 'step_complete', at: at(1), stepName: STEPS[i]!.name, details: { step_index: i } });
  }
  h = transition(h, { to: 'step_running', trigger: 'step_start', at: at(10), stepName: name, details: { step_index: index } });
  if (state === 'step_validating') h = transition(h, { to: 'step_validating', trigger: 'validation_start', at: at(12) });
  return { ...h, current_step: { step_name: name, step_index: index, started_at: at(10), attempt: 1, max_attempts: 3, ...extra } };
}

export function between(completed: number): Hook {
  const h = running(STEPS[completed - 1]!.name);
  return transition(h, {
    to: 'step_pending',
    trigger: 'step_complete',
    at: at(11),
    stepName: STEPS[completed - 1]!.name,
    details: { step_index: completed - 1 },
  });
}

export function ckpt(over: Partial<StepCheckpoint> & Pick<StepCheckpoint, 'step_index' | 'created_at'>): StepCheckpoint {
  return {
    checkpoint_id: 'ckpt-a1b2c3d4',
    step_name: STEPS[over.step_index]!.name,
    description: 'Added nil check for config.Server field',
    trigger: 'git_commit',
    git_branch: 'fix/null',
    git_commit: 'abc123def456abc123def456abc123def456abcd',
    git_dirty: false,
    ...over,
  };
}

export function receipt(over: Partial<ValidationReceipt>): ValidationReceipt {
  return {
    receipt_id: 'rcpt-00000001',
    step_name: 'validate',
    command: 'npm test',
    exit_code: 0,
    started_at: at(13),
    completed_at: at(14),
    duration: '12.3s',
    stdout_hash: 'a'.repeat(64),
    stderr_hash: 'b'.repeat(64),
    key_path: "m/44'/236'/0'/0/0",
    signature: '3045022100',
    ...over,
  };
}

export function diagnose(hook: Hook, over: Partial<RecoveryInput> = {}) {
  return diagnoseCrash({ hook, steps: STEPS, liveness: 'gone', now: NOW, ...over });
}

export function inStep(hook: Hook): Extract<StepPosition, { kind: 'in_step' }> {
  const pos = stepPosition(hook, STEPS);
  if (pos.kind !== 'in_step') throw new Error('expected in_step');
  return pos;
}

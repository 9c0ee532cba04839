// What crash recovery records (seed 003 RecoveryContext). Detection and recommendation rules live
// beside it in recovery-rules.ts once recovery is built.
import type { HookState } from './hook-state.js';

export const CRASH_TYPES = ['timeout', 'signal', 'unknown'] as const;
export type CrashType = (typeof CRASH_TYPES)[number];

export const RECOVERY_ACTIONS = ['retry_step', 'retry_from_checkpoint', 'skip_step', 'manual'] as const;
export type RecoveryAction = (typeof RECOVERY_ACTIONS)[number];

export function isRecoveryAction(value: unknown): value is RecoveryAction {
  return typeof value === 'string' && (RECOVERY_ACTIONS as readonly string[]).includes(value);
}

export interface RecoveryContext {
  detected_at: string;
  crash_type: CrashType;
  last_known_state: HookState;
  was_validating: boolean;
  validation_cmd?: string;
  /** Truncated to 500 characters. */
  partial_output?: string;
  recommended_action: RecoveryAction;
  reason: string;
  last_checkpoint_id?: string;
}

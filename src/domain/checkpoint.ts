// Checkpoints and file snapshots (seed 003 StepCheckpoint, CheckpointTrigger, FileSnapshot).

export const CHECKPOINT_TRIGGERS = ['manual', 'git_commit', 'git_push', 'pr_created', 'validation', 'step_complete', 'interval'] as const;

export type CheckpointTrigger = (typeof CHECKPOINT_TRIGGERS)[number];

export function isCheckpointTrigger(value: unknown): value is CheckpointTrigger {
  return typeof value === 'string' && (CHECKPOINT_TRIGGERS as readonly string[]).includes(value);
}

export interface FileSnapshot {
  path: string;
  size: number;
  /** RFC 3339. */
  mod_time: string;
  /** First 16 hex characters of the file's SHA-256. */
  sha256: string;
  exists: boolean;
}

export interface StepCheckpoint {
  checkpoint_id: string;
  created_at: string;
  step_name: string;
  step_index: number;
  description: string;
  trigger: CheckpointTrigger;
  git_branch: string;
  git_commit?: string;
  git_dirty: boolean;
  artifacts?: string[];
  files_snapshot?: FileSnapshot[];
}

export const CHECKPOINT_ID_PATTERN = /^ckpt-[0-9a-f]{8}$/;

export function isCheckpointId(value: unknown): value is string {
  return typeof value === 'string' && CHECKPOINT_ID_PATTERN.test(value);
}

export const DEFAULT_MAX_CHECKPOINTS = 50;

/** Keeps the newest `max` checkpoints (by position: checkpoints are appended in time order). */
export function pruneCheckpoints(checkpoints: StepCheckpoint[], max: number): StepCheckpoint[] {
  if (max <= 0 || checkpoints.length <= max) return checkpoints;
  return checkpoints.slice(checkpoints.length - max);
}

// Task templates: the ordered steps a task runs. Parsing and validation of YAML live in templates/.

export const STEP_TYPES = ['ai', 'command', 'validation', 'git', 'human'] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const GIT_ACTIONS = ['commit', 'push', 'pr'] as const;
export type GitAction = (typeof GIT_ACTIONS)[number];

/** What happens when a step fails after its last attempt. */
export type OnFailure = 'fail' | 'ask';

interface StepBase {
  name: string;
  description?: string;
  /** Safe to run again from the start after a crash (analysis, planning, validation). */
  idempotent?: boolean;
  max_attempts: number;
  /** Milliseconds; undefined for no limit beyond the step type's default. */
  timeout_ms?: number;
  on_failure: OnFailure;
}

export interface AiStep extends StepBase {
  type: 'ai';
  /** Prompt text; {{description}}, {{task_id}}, {{branch}} are filled in. */
  prompt: string;
  /** Claude Code --allowedTools patterns this step needs (on top of config ai.allowed_tools). */
  allowed_tools?: string[];
}

export interface CommandStep extends StepBase {
  type: 'command';
  /** Shell commands, run in order in the task's working tree. */
  run: string[];
}

export interface ValidationStep extends StepBase {
  type: 'validation';
  /** Commands to run; empty means config `validation.commands`, else detected from the repository. */
  commands: string[];
}

export interface GitStep extends StepBase {
  type: 'git';
  action: GitAction;
  /** Commit message (commit) or PR title (pr); {{description}} and {{task_id}} are filled in. */
  message?: string;
}

export interface HumanStep extends StepBase {
  type: 'human';
  /** What the person is asked to approve. */
  prompt: string;
}

export type StepDefinition = AiStep | CommandStep | ValidationStep | GitStep | HumanStep;

/** The points a `lifecycle:` section may name (the same as src/lifecycle/types.ts LIFECYCLE_POINTS). */
export const LIFECYCLE_HOOK_FIELDS = ['on_cold_start', 'on_message', 'on_stream_finish', 'on_terminate'] as const;

/** A template's `lifecycle:` section: shell commands per point, run in order (docs/lifecycle-hooks.md). */
export type LifecycleCommands = Partial<Record<(typeof LIFECYCLE_HOOK_FIELDS)[number], string[]>>;

export interface Template {
  name: string;
  description: string;
  /** Prefix of the task's branch, e.g. "fix/". */
  branch_prefix: string;
  /** Run in a new git worktree (default) or in the current checkout. */
  worktree: boolean;
  steps: StepDefinition[];
  /** Commands run at the agent's lifecycle points, before those of the configuration. */
  lifecycle?: LifecycleCommands;
  /** Control paths (a file, or a folder ending in /) its steps may change without a person's review. */
  control_paths?: string[];
  /** Where it was loaded from, for messages. */
  source: string;
}

/** Steps whose names say they only read (seed 003: analyze, plan) count as idempotent too. */
const IDEMPOTENT_NAMES = /^(analy[sz]e|analysis|plan|planning|review|validate|validation|check|lint|test)$/i;

export function isIdempotentStep(step: StepDefinition): boolean {
  if (step.idempotent !== undefined) return step.idempotent;
  if (step.type === 'validation') return true;
  return IDEMPOTENT_NAMES.test(step.name);
}

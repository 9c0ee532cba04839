// Did the cut-off step finish its work before the crash? (the skip_step rule) Evidence in the hook
// (a step_complete checkpoint, passing receipts of a validation step) is read by the pure rules;
// this adds what only git can tell, read in the task's own working tree.
import type { Hook } from '../domain/hook.js';
import type { FinishedWork, StepPosition } from '../domain/recovery-rules.js';
import { finishedWorkInHook } from '../domain/recovery-rules.js';
import type { Task } from '../domain/task.js';
import { runGit } from '../git/run-git.js';
import { readGitState } from '../git/state.js';

export interface EvidenceOptions {
  /** config validation.commands: what a validation step with no commands of its own runs. */
  validationCommands?: readonly string[];
  /** config git.remote, for push steps. */
  gitRemote?: string;
}

type InStep = Extract<StepPosition, { kind: 'in_step' }>;

async function headCommit(worktree: string): Promise<{ sha: string; committedAt: number } | undefined> {
  const { stdout, code } = await runGit(worktree, ['log', '-1', '--format=%H %ct', 'HEAD'], { allowFailure: true });
  const [sha, seconds] = stdout.trim().split(' ');
  if (code !== 0 || !sha || !seconds) return undefined;
  return { sha, committedAt: Number(seconds) * 1000 };
}

/** A git commit step finished when HEAD is a new commit made after the step started and nothing is left uncommitted. */
async function commitEvidence(hook: Hook, task: Task, pos: InStep): Promise<FinishedWork | undefined> {
  const head = await headCommit(task.worktree);
  if (!head || head.committedAt < Date.parse(pos.startedAt)) return undefined;
  // Second precision: a commit from the same second as the step's start must not be an older, known one.
  const known = new Set(
    hook.checkpoints.filter((c) => Date.parse(c.created_at) < Date.parse(pos.startedAt) && c.git_commit).map((c) => c.git_commit),
  );
  if (known.has(head.sha) || head.sha === task.base_commit) return undefined;
  const state = await readGitState(task.worktree);
  if (state.dirty) return undefined;
  return {
    evidence: `commit ${head.sha.slice(0, 12)} was made at ${new Date(head.committedAt).toISOString().replace(/\.\d{3}Z$/, 'Z')} and nothing is left uncommitted`,
  };
}

/** A push step finished when the remote-tracking branch (updated by a successful push) is at HEAD. */
async function pushEvidence(task: Task, remote: string): Promise<FinishedWork | undefined> {
  const head = await headCommit(task.worktree);
  if (!head) return undefined;
  const ref = `refs/remotes/${remote}/${task.branch}`;
  const { stdout, code } = await runGit(task.worktree, ['rev-parse', '--verify', '--quiet', ref], { allowFailure: true });
  if (code !== 0 || stdout.trim() !== head.sha) return undefined;
  return { evidence: `${remote}/${task.branch} is at ${head.sha.slice(0, 12)}, so the push went through` };
}

/** Evidence that the step at `pos` finished, or undefined when nothing proves it. Never throws for git trouble. */
export async function findFinishedWork(
  hook: Hook,
  task: Task,
  pos: InStep,
  options: EvidenceOptions = {},
): Promise<FinishedWork | undefined> {
  const inHook = finishedWorkInHook(hook, pos, options.validationCommands ?? []);
  if (inHook) return inHook;
  const def = pos.definition;
  if (def?.type !== 'git') return undefined;
  try {
    if (def.action === 'commit') return await commitEvidence(hook, task, pos);
    if (def.action === 'push') return await pushEvidence(task, options.gitRemote ?? 'origin');
  } catch {
    // Git could not answer (tree missing, repository broken): no evidence, so no skip.
  }
  return undefined;
}

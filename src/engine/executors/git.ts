// `git` steps in the task's working tree: commit (stage everything, commit if there is anything
// to commit), push (only with git.push), pr (only with git.pull_request, via git.pr_command).
import type { GitStep } from '../../domain/template.js';
import { localExecutor } from '../../exec/local.js';
import { whileIndexLocked } from '../../git/index-lock.js';
import { runGit } from '../../git/run-git.js';
import { SIMPLE_GIT_UNSAFE, safeGitConfigArgs } from '../../git/safe-config.js';
import { createCheckpoint } from '../../hook/checkpoint.js';
import { shellQuote } from '../processes.js';
import { describeExit, runStreamed } from './command.js';
import type { StepResult, StepRunContext } from './types.js';

const DEFAULT_MESSAGE = 'atlas: {{description}} ({{task_id}})';

/**
 * simple-git on the task's tree, outside the sandbox. In local mode the user's hooks run (the tree
 * is trusted as much as the user's own); in sandbox mode none does: hooks run code of the tree
 * (husky, lint-staged), which a sandboxed step could have written.
 */
async function git(ctx: StepRunContext<GitStep>) {
  const { simpleGit } = await import('simple-git');
  // No .env(): simple-git refuses environments with EDITOR, PAGER, GIT_SSH_COMMAND and the like,
  // which many users have set; git inherits this process's environment instead.
  // simple-git refuses any core.fsmonitor given on the command line; ours turns it off.
  const config = safeGitConfigArgs({ hooks: ctx.executor.mode !== 'sandbox' });
  return simpleGit({ baseDir: ctx.task.worktree, config, unsafe: SIMPLE_GIT_UNSAFE });
}

/**
 * In a sandboxed task the commit itself runs in the sandbox: the user's hooks (pre-commit,
 * commit-msg, post-commit) run there, where what they execute from the tree can reach nothing.
 */
async function commitInSandbox(ctx: StepRunContext<GitStep>, message: string): Promise<{ ok: boolean; error?: string }> {
  // Staged outside (atlas's own git, see commit()): inside, the sandbox's mount points for absent
  // protected files are in the tree and `git add -A` would trip on them.
  const command = `git commit -q -F - <<'ATLAS_COMMIT_MESSAGE'\n${message}\nATLAS_COMMIT_MESSAGE`;
  const result = await runStreamed(ctx, command, { capture: true, timeoutMs: ctx.step.timeout_ms });
  if (result.exitCode === 0) return { ok: true };
  return {
    ok: false,
    error:
      describeExit('git commit', result, ctx.step.timeout_ms) +
      (result.stderr.length ? `: ${result.stderr.toString('utf8').trim().split('\n').slice(-3).join(' ')}` : ''),
  };
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).trim().split('\n').slice(0, 6).join(' ');
}

async function commit(ctx: StepRunContext<GitStep>): Promise<StepResult> {
  const repo = await git(ctx);
  ctx.progress.setWorkingOn('committing');
  // atlas's own post-commit hook (atlas hook install) stays out of this commit: the step's
  // step_complete checkpoint records it under the right step, where the hook's background
  // checkpoint would land after the step ended (under the next step, or not at all at the end).
  const skipBefore = process.env['ATLAS_HOOK_SKIP'];
  process.env['ATLAS_HOOK_SKIP'] = '1';
  try {
    // atlas's own git (pinned folders, no hooks): in a sandboxed task the tree is the step's. A git
    // that a killed atlas left running may still hold the index: the step waits for it.
    await whileIndexLocked(async () => {
      if (ctx.executor.mode === 'sandbox') await runGit(ctx.task.worktree, ['add', '-A']);
      else await repo.add(['-A']);
    });
    const status = await repo.status();
    if (status.staged.length === 0 && status.files.length === 0) {
      ctx.reporter.note('nothing to commit: the working tree is clean');
      return { status: 'ok', summary: 'nothing to commit', details: { committed: false } };
    }
    const message = ctx.fill(ctx.step.message ?? DEFAULT_MESSAGE);
    let branch = ctx.task.branch;
    if (ctx.executor.mode === 'sandbox') {
      const done = await commitInSandbox(ctx, message);
      if (!done.ok) return { status: 'failed', error: `git commit failed: ${done.error}` };
    } else {
      branch = (await whileIndexLocked(() => repo.commit(message))).branch || branch;
    }
    const sha = (await repo.revparse(['HEAD'])).trim();
    ctx.progress.addFiles(status.files.map((f) => f.path));
    ctx.reporter.note(`committed ${sha.slice(0, 12)} on ${branch}: ${message.split('\n')[0]}`);
    return {
      status: 'ok',
      summary: `committed ${sha.slice(0, 12)}`,
      details: { committed: true, commit: sha, files: status.files.length },
    };
  } catch (error) {
    return { status: 'failed', error: `git commit failed: ${errorText(error)}` };
  } finally {
    if (skipBefore === undefined) delete process.env['ATLAS_HOOK_SKIP'];
    else process.env['ATLAS_HOOK_SKIP'] = skipBefore;
  }
}

async function push(ctx: StepRunContext<GitStep>): Promise<StepResult> {
  if (!ctx.config.git.push) {
    ctx.reporter.note('push skipped: git.push is false (set git.push: true in .atlas/config.yaml to let atlas push)');
    return { status: 'ok', summary: 'skipped (git.push is false)', details: { pushed: false } };
  }
  const repo = await git(ctx);
  const remote = ctx.config.git.remote;
  ctx.progress.setWorkingOn(`pushing ${ctx.task.branch} to ${remote}`);
  try {
    // Pushing needs the user's credentials, so it runs outside the sandbox: in a sandboxed task
    // without the pre-push hook (it runs code of the tree).
    await repo.push(remote, ctx.task.branch, ['--set-upstream', ...(ctx.executor.mode === 'sandbox' ? ['--no-verify'] : [])]);
  } catch (error) {
    return { status: 'failed', error: `git push ${remote} ${ctx.task.branch} failed: ${errorText(error)}` };
  }
  const checkpoint = await createCheckpoint(ctx.manager, { description: `pushed ${ctx.task.branch} to ${remote}`, trigger: 'git_push' });
  ctx.reporter.note(`pushed ${ctx.task.branch} to ${remote}; checkpoint ${checkpoint.checkpoint_id}`);
  return { status: 'ok', summary: `pushed to ${remote}`, details: { pushed: true, remote } };
}

async function pullRequest(ctx: StepRunContext<GitStep>): Promise<StepResult> {
  if (!ctx.config.git.pull_request) {
    ctx.reporter.note('pull request skipped: git.pull_request is false (set git.pull_request: true, and git.push, to open one)');
    return { status: 'ok', summary: 'skipped (git.pull_request is false)', details: { pull_request: false } };
  }
  const command = ctx.config.git.pr_command.split('{branch}').join(shellQuote(ctx.task.branch));
  ctx.progress.setWorkingOn(`opening a pull request: ${command}`);
  ctx.reporter.note(`$ ${command}`);
  // atlas's own git work runs outside the sandbox: it needs the user's credentials (gh, ssh).
  const result = await runStreamed(ctx, command, { capture: true, timeoutMs: ctx.step.timeout_ms, executor: localExecutor });
  if (ctx.interrupts.signal) return { status: 'failed', error: 'interrupted while opening the pull request' };
  if (result.exitCode !== 0) return { status: 'failed', error: `${describeExit(command, result, ctx.step.timeout_ms)} (git.pr_command)` };
  const url = /https?:\/\/\S+/.exec(result.stdout.toString('utf8'))?.[0];
  const checkpoint = await createCheckpoint(ctx.manager, {
    description: url ? `pull request opened: ${url}` : 'pull request opened',
    trigger: 'pr_created',
  });
  ctx.reporter.note(`pull request opened${url ? `: ${url}` : ''}; checkpoint ${checkpoint.checkpoint_id}`);
  return {
    status: 'ok',
    summary: url ? `pull request ${url}` : 'pull request opened',
    details: { pull_request: true, ...(url ? { url } : {}) },
  };
}

export async function runGitStep(ctx: StepRunContext<GitStep>): Promise<StepResult> {
  switch (ctx.step.action) {
    case 'commit':
      return commit(ctx);
    case 'push':
      return push(ctx);
    case 'pr':
      return pullRequest(ctx);
  }
}

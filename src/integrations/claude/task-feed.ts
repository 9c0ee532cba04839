// What a Claude Code session tells the task that owns its working directory: files touched,
// commits and the last output (the heartbeat is in heartbeat.ts, loaded on every event).
// Every hook.json change goes through the HookManager (one locked read-modify-write).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MAX_CHECKPOINTS } from '../../domain/checkpoint.js';
import { addFilesTouched, withLastOutput } from '../../domain/step-context.js';
import type { ReceiptStatusFn } from '../../hook/manager.js';
import { HookManager } from '../../hook/manager.js';
import type { TaskLink } from './heartbeat.js';

export type { TaskLink } from './heartbeat.js';

export function hookManager(link: TaskLink, home: string, maxCheckpoints = DEFAULT_MAX_CHECKPOINTS): HookManager {
  // HOOK.md shows each receipt's verification; the verifier (config, crypto) loads only when the
  // hook has receipts, so a hook write during a tool call stays cheap.
  const receiptStatuses: ReceiptStatusFn = async (hook, task) => {
    const { loadConfig } = await import('../../config/load.js');
    const { config } = await loadConfig({ home, ...(task ? { repoRoot: task.repo_root } : {}) });
    const { createReceiptStatuses } = await import('../../receipts/status.js');
    return createReceiptStatuses(home, config.hooks.key_derivation)(hook, task);
  };
  return new HookManager(link.ref, { maxCheckpoints, receiptStatuses });
}

export async function recordFiles(link: TaskLink, home: string, files: string[]): Promise<void> {
  if (files.length === 0) return;
  await hookManager(link, home).update((hook) =>
    hook.current_step ? { ...hook, current_step: addFilesTouched(hook.current_step, files) } : hook,
  );
}

export async function recordLastOutput(link: TaskLink, home: string, text: string): Promise<void> {
  if (text.trim().length === 0) return;
  await hookManager(link, home).update((hook) =>
    hook.current_step ? { ...hook, current_step: withLastOutput(hook.current_step, text) } : hook,
  );
}

/** A git_commit checkpoint for a commit made through Bash, unless atlas's git hooks record it. */
export async function recordCommit(link: TaskLink, home: string): Promise<'recorded' | 'git-hooks' | 'known' | 'none'> {
  const { locateHooksDir } = await import('../../githooks/hooks-dir.js');
  const { isManagedHookText } = await import('../../githooks/script.js');
  try {
    const { hooksDir } = await locateHooksDir(link.task.worktree);
    if (isManagedHookText(readFileSync(join(hooksDir, 'post-commit'), 'utf8'), 'post-commit')) return 'git-hooks';
  } catch {
    // No hooks directory or no post-commit hook: atlas records the commit here.
  }
  const { readGitState } = await import('../../git/state.js');
  const git = await readGitState(link.task.worktree);
  if (!git.commit) return 'none';
  const { loadConfig } = await import('../../config/load.js');
  const { config } = await loadConfig({ home, repoRoot: link.task.repo_root });
  const manager = hookManager(link, home, config.hooks.max_checkpoints);
  if (manager.read().checkpoints.some((c) => c.git_commit === git.commit)) return 'known';
  const { createCheckpoint } = await import('../../hook/checkpoint.js');
  await createCheckpoint(manager, { description: 'commit made in a Claude Code session', trigger: 'git_commit', git });
  return 'recorded';
}

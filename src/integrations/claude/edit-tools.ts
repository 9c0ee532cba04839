// Claude Code's tools that change files, read from an event without loading the HookManager:
// the edit tools and the input field naming their file, and `git commit` in a Bash command.
import { readFileSync } from 'node:fs';
import { ClaudeStreamParser } from '../../agent/claude-stream.js';
import { realpath } from '../../git/locate.js';
import { taskFiles } from '../../store/paths.js';
import type { TaskLink } from './heartbeat.js';

export const EDIT_TOOL_PATHS: Readonly<Record<string, string>> = {
  Edit: 'file_path',
  Write: 'file_path',
  MultiEdit: 'file_path',
  NotebookEdit: 'notebook_path',
};

export function editedPath(toolName: string | undefined, input: Record<string, unknown> | undefined): string | undefined {
  const key = toolName ? EDIT_TOOL_PATHS[toolName] : undefined;
  const path = key ? input?.[key] : undefined;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}

/** The files an edit tool call changed, relative to the task's working tree (outside: none). */
export function editedFiles(link: TaskLink, toolName: string | undefined, input: Record<string, unknown> | undefined): string[] {
  const path = editedPath(toolName, input);
  if (!path) return [];
  const rel = new ClaudeStreamParser(link.task.worktree, realpath(link.task.worktree)).relativePath(path);
  return rel ? [rel] : [];
}

/**
 * Files the hook's current step does not list yet (a plain read of hook.json: an agent edits the
 * same files again and again, and only a new one is worth a locked hook write).
 */
export function newFiles(link: TaskLink, files: string[]): string[] {
  if (files.length === 0) return files;
  try {
    const hook = JSON.parse(readFileSync(taskFiles(link.ref.dir).hook, 'utf8')) as { current_step?: { files_touched?: unknown } };
    const known = hook.current_step?.files_touched;
    if (!hook.current_step) return [];
    return Array.isArray(known) ? files.filter((f) => !known.includes(f)) : files;
  } catch {
    return files;
  }
}

/** `git commit` in any of its spellings (`git -C dir commit`, `git -c k=v commit`). */
export function isGitCommitCommand(command: string): boolean {
  return /(?:^|[;&|(`\s])git(?:\s+-[A-Za-z-]+(?:[= ](?!-)[^\s;&|]+)?)*\s+commit\b/.test(command);
}

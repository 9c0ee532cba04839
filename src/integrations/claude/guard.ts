// The PreToolUse guard (seed 004, docs/claude-code.md "The guard"): an agent must not read or
// write atlas's keys, nor edit a task's hook.json, receipts or artifacts itself: those are what
// receipts prove, and atlas writes them. File tools are judged by their path (symlinks
// resolved), Bash commands by the paths and names they contain. Pure apart from realpath.
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

const WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
const PATH_KEYS = ['file_path', 'notebook_path', 'path'] as const;

export interface GuardInput {
  toolName: string;
  toolInput: Record<string, unknown>;
  cwd: string;
  /** ATLAS_HOME, absolute. */
  home: string;
}

/** The deepest existing ancestor resolved through symlinks, the rest appended as written. */
export function resolveThroughLinks(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse());
    } catch {
      const parent = dirname(head);
      if (parent === head) return path;
      tail.push(basename(head));
      head = parent;
    }
  }
}

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

const CHECKPOINT_HINT = 'atlas records checkpoints, receipts and artifacts itself: use `atlas checkpoint "what you did"` to record progress, and `atlas hook status` to read the task\'s state';

/** What a path under ATLAS_HOME is, for the guard. */
function classify(path: string, home: string): 'keys' | 'home' | 'task-record' | undefined {
  if (!inside(path, home)) return undefined;
  if (path === home) return 'home';
  const parts = relative(home, path).split(sep);
  if (parts[0] === 'keys') return 'keys';
  // workspaces/<ws>/tasks/<id>/<file...>
  if (parts[0] === 'workspaces' && parts[2] === 'tasks' && parts.length >= 5) {
    const file = parts[4]!;
    if (file === 'hook.json' || file === 'artifacts' || file === 'receipts' || file.startsWith('hook.json.')) return 'task-record';
  }
  return undefined;
}

function denyForPath(tool: string, raw: string, cwd: string, home: string): string | undefined {
  const expanded = raw.startsWith('~/') ? join(process.env['HOME'] ?? '~', raw.slice(2)) : raw;
  const path = resolveThroughLinks(resolve(cwd, expanded));
  const kind = classify(path, home);
  if (kind === 'keys') return `atlas guard: ${tool} on ${raw} is refused: atlas's signing keys (${join(home, 'keys')}) are off limits to agents. ${CHECKPOINT_HINT}.`;
  if (kind === 'home' && !WRITE_TOOLS.has(tool)) return `atlas guard: ${tool} over ATLAS_HOME (${home}) is refused: it holds atlas's signing keys. Search inside a task's folder instead, or use \`atlas hook status\`.`;
  if (kind === 'task-record' && WRITE_TOOLS.has(tool)) return `atlas guard: ${tool} on ${raw} is refused: a task's hook.json, receipts and artifacts are written by atlas only. ${CHECKPOINT_HINT}.`;
  return undefined;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Does a shell command name the keys, or a task's hook.json, receipts or artifacts? */
function denyForCommand(command: string, homePaths: string[]): string | undefined {
  const homes = [...new Set(homePaths)].map(escape).join('|');
  const homeRef = `(?:${homes}|\\$\\{?ATLAS_HOME\\}?|~/\\.atlas|\\.atlas)`;
  if (/\bmaster\.key\b/.test(command) || new RegExp(`${homeRef}/+keys\\b`).test(command)) {
    return `atlas guard: this command names atlas's signing keys, which are off limits to agents. ${CHECKPOINT_HINT}.`;
  }
  if (new RegExp(`${homeRef}/[^\\s'"]*(?:hook\\.json|/artifacts\\b|/receipts\\b)`).test(command) || /\/tasks\/task-[0-9-]+\/+(?:hook\.json|artifacts|receipts)\b/.test(command)) {
    return `atlas guard: this command names a task's hook.json, receipts or artifacts, which only atlas writes. ${CHECKPOINT_HINT}.`;
  }
  return undefined;
}

/** The reason to deny this tool call, or undefined to let it through. */
export function guardToolCall(input: GuardInput): string | undefined {
  const home = resolveThroughLinks(resolve(input.home));
  if (input.toolName === 'Bash') {
    const command = input.toolInput['command'];
    return typeof command === 'string' ? denyForCommand(command, [resolve(input.home), home]) : undefined;
  }
  for (const key of PATH_KEYS) {
    const value = input.toolInput[key];
    if (typeof value === 'string' && value.length > 0) {
      const reason = denyForPath(input.toolName, value, input.cwd, home);
      if (reason) return reason;
    }
  }
  // MultiEdit and friends may carry several edits, each with its own path.
  const edits = input.toolInput['edits'];
  if (Array.isArray(edits)) {
    for (const edit of edits) {
      const value = (edit as Record<string, unknown> | null)?.['file_path'];
      if (typeof value === 'string' && WRITE_TOOLS.has(input.toolName)) {
        const reason = denyForPath(input.toolName, value, input.cwd, home);
        if (reason) return reason;
      }
    }
  }
  return undefined;
}

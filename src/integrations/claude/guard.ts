// The PreToolUse guard (seed 004, docs/claude-code.md "The guard"): an agent must not read or
// write atlas's keys, search a folder that holds them, edit atlas's configuration and templates
// (their lifecycle hooks run with the key in reach), nor edit a task's hook.json, receipts or
// artifacts itself. Every string argument of every tool is judged as a path (symlinks resolved);
// Bash commands by the paths and names they contain, refusing any that names ATLAS_HOME. It is a
// second fence: the sandbox is the wall (docs/security.md). Pure apart from realpath.
import { dirname, join, resolve } from 'node:path';
import { controlDenial, controlFile } from './guard-control.js';
import { classify, ownTree, pathStrings, resolveThroughLinks } from './guard-paths.js';
import { shellReach } from './guard-shell.js';

export { resolveThroughLinks } from './guard-paths.js';

const WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
/** Claude Code's own tools that only read or search. Any other tool (MCP) is judged as both. */
const READ_TOOLS = new Set(['Read', 'Grep', 'Glob', 'LS', 'NotebookRead']);
/** Tools whose input holds no paths (URLs, text, todo lists). */
const NO_PATH_TOOLS = new Set(['WebFetch', 'WebSearch', 'TodoWrite', 'Task', 'ExitPlanMode']);

export interface GuardInput {
  toolName: string;
  toolInput: Record<string, unknown>;
  cwd: string;
  /** ATLAS_HOME, absolute. */
  home: string;
  /** HOME and CLAUDE_CONFIG_DIR (the hook's environment; process.env when absent). */
  env?: NodeJS.ProcessEnv;
}

const CHECKPOINT_HINT =
  'atlas records checkpoints, receipts and artifacts itself: use `atlas checkpoint "what you did"` to record progress, and `atlas hook status` to read the task\'s state';

function denyForPath(tool: string, raw: string, cwd: string, home: string, env: NodeJS.ProcessEnv): string | undefined {
  const expanded = raw === '~' || raw.startsWith('~/') ? join(env['HOME'] ?? '~', raw.slice(1)) : raw;
  const path = resolveThroughLinks(resolve(cwd, expanded));
  const kind = classify(path, home, ownTree(resolveThroughLinks(resolve(cwd)), home));
  const writes = !READ_TOOLS.has(tool);
  const reads = !WRITE_TOOLS.has(tool);
  if (kind === 'keys')
    return `atlas guard: ${tool} on ${raw} is refused: atlas's signing keys (${join(home, 'keys')}) are off limits to agents. ${CHECKPOINT_HINT}.`;
  if ((kind === 'home' || kind === 'contains-home') && reads) {
    return `atlas guard: ${tool} over ${raw} is refused: it contains ATLAS_HOME (${home}), which holds atlas's signing keys. Search inside the project or a task's folder instead, or use \`atlas hook status\`.`;
  }
  if (kind === 'atlas-config' && writes)
    return `atlas guard: ${tool} on ${raw} is refused: atlas's configuration, templates, store and server files are not the agent's to change (atlas runs their hooks).`;
  if (kind === 'task-record' && writes)
    return `atlas guard: ${tool} on ${raw} is refused: a task's hook.json, receipts and artifacts are written by atlas only. ${CHECKPOINT_HINT}.`;
  const control = writes ? controlFile(path, home, env) : undefined;
  return control ? controlDenial(tool, raw, control) : undefined;
}

const KEYS_DENIAL = `atlas guard: this command names atlas's signing keys, which are off limits to agents. ${CHECKPOINT_HINT}.`;
const HOME_DENIAL =
  "atlas guard: this command names ATLAS_HOME, which holds atlas's signing keys, configuration and other tasks: agents work in the project. Use `atlas hook status` to read the task's state.";
const RECORD_DENIAL = `atlas guard: this command names a task's hook.json, receipts or artifacts, which only atlas writes. ${CHECKPOINT_HINT}.`;

/** What a Bash command reaches through relative paths, `cd`s and globs; what it writes to. */
function denyForReach(command: string, cwd: string, home: string, own: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const reach = shellReach(command, cwd, env);
  for (const p of reach.paths) {
    const kind = classify(resolveThroughLinks(p.path), home, own);
    if (kind === 'keys') return KEYS_DENIAL;
    if (kind === 'task-record') return RECORD_DENIAL;
    if ((kind === 'home' || kind === 'contains-home') && (p.relative || p.searchRoot)) return HOME_DENIAL;
  }
  for (const target of reach.writes) {
    const control = controlFile(resolveThroughLinks(target), home, env);
    if (control) return controlDenial('Bash', target, control);
  }
  return undefined;
}

/** The folder a glob pattern reads from: its path up to the first wildcard. */
function globRoot(pattern: string, base: string): string {
  const full = resolve(base, pattern);
  const at = full.search(/[*?[{]/);
  return at < 0 ? full : dirname(`${full.slice(0, at)}x`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Does a shell command name the keys, a task's records, or ATLAS_HOME at all? */
function denyForCommand(command: string, homePaths: string[], own: string | undefined): string | undefined {
  const literal = [...new Set(homePaths)].map(escapeRegExp).join('|');
  const homeRef = `(?:${literal}|\\$\\{?ATLAS_HOME\\b\\}?|~/\\.atlas\\b|\\$\\{?HOME\\}?/\\.atlas\\b)`;
  if (/\bmaster\.key\b/i.test(command) || new RegExp(`(?:${homeRef}|\\.atlas)/+keys\\b`, 'i').test(command)) return KEYS_DENIAL;
  if (
    new RegExp(`${homeRef}/[^\\s'"]*(?:hook\\.json|/artifacts\\b|/receipts\\b)`).test(command) ||
    /\/tasks\/task-[0-9-]+\/+(?:hook\.json|artifacts|receipts)\b/.test(command)
  )
    return RECORD_DENIAL;
  // A task's worktree and temp folder, a conversation's workspace, lie under ATLAS_HOME and are the
  // agent's: naming them is fine.
  let withoutTmp = command.replace(new RegExp(`(?:${literal})/workspaces/[^/\\s'"]+/(?:worktree|tasks/[^/\\s'"]+/tmp)\\b`, 'g'), '');
  if (own) withoutTmp = withoutTmp.split(own).join('');
  return new RegExp(homeRef).test(withoutTmp) ? HOME_DENIAL : undefined;
}

/** The reason to deny this tool call, or undefined to let it through. */
export function guardToolCall(input: GuardInput): string | undefined {
  const home = resolveThroughLinks(resolve(input.home));
  const env = input.env ?? process.env;
  if (input.toolName === 'Bash') {
    const command = input.toolInput['command'];
    if (typeof command !== 'string') return undefined;
    const cwd = resolveThroughLinks(resolve(input.cwd));
    const own = ownTree(cwd, home);
    const names = (text: string) => denyForCommand(text, [resolve(input.home), home], own);
    // Quotes and backslashes split a name for the eye only (`ke""ys`).
    return names(command) ?? names(command.replace(/\\(.)/g, '$1').replace(/['"]/g, '')) ?? denyForReach(command, cwd, home, own, env);
  }
  if (NO_PATH_TOOLS.has(input.toolName)) return undefined;
  const search = input.toolName === 'Grep' || input.toolName === 'Glob';
  const base = typeof input.toolInput['path'] === 'string' ? resolve(input.cwd, input.toolInput['path']) : input.cwd;
  // A search with no path searches the current folder; a pattern's folders are searched too.
  const roots = search && typeof input.toolInput['path'] !== 'string' ? [input.cwd] : [];
  if (search)
    for (const key of ['pattern', 'glob'] as const)
      if (typeof input.toolInput[key] === 'string' && (input.toolName === 'Glob' || key === 'glob'))
        roots.push(globRoot(input.toolInput[key], base));
  for (const value of [...pathStrings(input.toolInput), ...roots]) {
    const reason = denyForPath(input.toolName, value, input.cwd, home, env);
    if (reason) return reason;
  }
  return undefined;
}

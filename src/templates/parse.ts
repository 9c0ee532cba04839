// Validating parser from YAML data to Template (docs/templates.md). Every problem names the file,
// the step (index and name) and the field, and says what is allowed.
import { extname } from 'node:path';
import type { ParsedYaml } from '../config/yaml-lib.js';
import { parseYamlText } from '../config/yaml-lib.js';
import { parseDuration } from '../domain/duration.js';
import { AtlasError, EXIT } from '../domain/errors.js';
import type { GitAction, LifecycleCommands, OnFailure, StepDefinition, StepType, Template } from '../domain/template.js';
import { GIT_ACTIONS, LIFECYCLE_HOOK_FIELDS, STEP_TYPES } from '../domain/template.js';

/** Attempts a step gets when the template does not say (docs/templates.md). */
export const DEFAULT_MAX_ATTEMPTS: Record<StepType, number> = {
  ai: 3,
  command: 1,
  validation: 1,
  git: 1,
  human: 1,
};

const TEMPLATE_FIELDS = ['name', 'description', 'branch_prefix', 'worktree', 'steps', 'lifecycle', 'control_paths'] as const;
const COMMON_STEP_FIELDS = ['name', 'type', 'description', 'idempotent', 'max_attempts', 'timeout', 'on_failure'];
const STEP_FIELDS: Record<StepType, string[]> = {
  ai: [...COMMON_STEP_FIELDS, 'prompt', 'allowed_tools'],
  command: [...COMMON_STEP_FIELDS, 'run'],
  validation: [...COMMON_STEP_FIELDS, 'commands'],
  git: [...COMMON_STEP_FIELDS, 'action', 'message'],
  human: [...COMMON_STEP_FIELDS, 'prompt'],
};

export const TEMPLATE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]*$/i;
const STEP_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
// What git accepts in a branch name prefix, kept conservative.
const BRANCH_PREFIX_PATTERN = /^(?:[A-Za-z0-9._-]+\/)*[A-Za-z0-9._-]*$/;

type Obj = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return String(v);
}

class Problems {
  constructor(private readonly file: string) {}

  fail(where: string, problem: string, allowed?: string): never {
    throw new AtlasError(`${this.file}: ${where}: ${problem}`, {
      exitCode: EXIT.input,
      hint: allowed ?? 'see docs/templates.md for the template format',
    });
  }
}

function stepWhere(index: number, name: unknown): string {
  return typeof name === 'string' && name.length > 0 ? `step ${index + 1} "${name}"` : `step ${index + 1}`;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A string, or a list of strings (a single string becomes a one-item list). */
function commandList(p: Problems, where: string, field: string, value: unknown, required: boolean): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (value === undefined || value === null) {
    if (required) p.fail(`${where}: field "${field}"`, 'is required', `give a command, or a list of commands, e.g. ${field}: npm test`);
    return [];
  }
  // YAML reads an unquoted `word: rest` as a mapping, so a command containing ": " arrives as one.
  const quoteHint = `quote the command so YAML keeps it as text, e.g. ${field}: ['echo "step: done"']`;
  if (!Array.isArray(list)) {
    p.fail(
      `${where}: field "${field}"`,
      `expected a command or a list of commands, got ${describe(value)}`,
      isObj(value) ? quoteHint : `for example: ${field}: [npm run lint, npm test]`,
    );
  }
  const bad = list.findIndex((c) => typeof c !== 'string');
  if (bad >= 0) {
    const item: unknown = list[bad];
    const mapping = isObj(item)
      ? ` (${Object.entries(item)
          .map(([k, v]) => `${k}:${v === null ? '' : ` ${typeof v === 'string' ? v : JSON.stringify(v)}`}`)
          .join(', ')})`
      : '';
    p.fail(
      `${where}: field "${field}"`,
      `command ${bad + 1} is ${describe(item)}${mapping}, not text`,
      isObj(item) ? quoteHint : `write each command as text, e.g. ${field}: [npm run lint, npm test]`,
    );
  }
  const commands = (list as string[]).map((c) => c.trim());
  const empty = commands.findIndex((c) => c.length === 0);
  if (empty >= 0) p.fail(`${where}: field "${field}"`, `command ${empty + 1} is empty`, 'remove it or write the command');
  if (required && commands.length === 0) p.fail(`${where}: field "${field}"`, 'is an empty list', 'give at least one command');
  return commands;
}

function parseStep(p: Problems, raw: unknown, index: number, seen: Set<string>): StepDefinition {
  if (!isObj(raw)) p.fail(`step ${index + 1}`, `expected a mapping with name and type, got ${describe(raw)}`);
  const where = stepWhere(index, raw['name']);
  const name = raw['name'];
  if (typeof name !== 'string' || name.trim().length === 0) {
    p.fail(
      `${where}: field "name"`,
      name === undefined ? 'is required' : `expected text, got ${describe(name)}`,
      'give each step a short name such as analyze, implement, validate',
    );
  }
  if (!STEP_NAME_PATTERN.test(name)) {
    p.fail(
      `${where}: field "name"`,
      `${describe(name)} has characters that cannot be used in file names`,
      'use letters, digits, "-" and "_" (it names the step\'s artifacts folder)',
    );
  }
  if (seen.has(name))
    p.fail(`${where}: field "name"`, `another step is already named "${name}"`, 'step names must be unique within a template');
  seen.add(name);

  const type = raw['type'];
  if (typeof type !== 'string' || !(STEP_TYPES as readonly string[]).includes(type)) {
    p.fail(
      `${where}: field "type"`,
      type === undefined ? 'is required' : `unknown step type ${describe(type)}`,
      `allowed: ${STEP_TYPES.join(', ')}`,
    );
  }
  const stepType = type as StepType;
  const allowed = STEP_FIELDS[stepType];
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) {
      p.fail(`${where}: field "${key}"`, `is not a field of ${stepType} steps`, `fields of ${stepType} steps: ${allowed.join(', ')}`);
    }
  }

  const description = raw['description'];
  if (description !== undefined && typeof description !== 'string')
    p.fail(`${where}: field "description"`, `expected text, got ${describe(description)}`);

  const idempotent = raw['idempotent'];
  if (idempotent !== undefined && typeof idempotent !== 'boolean')
    p.fail(`${where}: field "idempotent"`, `expected true or false, got ${describe(idempotent)}`);

  let maxAttempts = DEFAULT_MAX_ATTEMPTS[stepType];
  const rawAttempts = raw['max_attempts'];
  if (rawAttempts !== undefined) {
    if (typeof rawAttempts !== 'number' || !Number.isInteger(rawAttempts) || rawAttempts < 1 || rawAttempts > 100) {
      p.fail(`${where}: field "max_attempts"`, `expected a whole number from 1 to 100, got ${describe(rawAttempts)}`);
    }
    maxAttempts = rawAttempts;
  }

  let timeoutMs: number | undefined;
  const rawTimeout = raw['timeout'];
  if (rawTimeout !== undefined) {
    const ms = typeof rawTimeout === 'string' ? parseDuration(rawTimeout) : undefined;
    if (ms === undefined || ms <= 0)
      p.fail(`${where}: field "timeout"`, `expected a duration such as 90s, 10m or 1h30m, got ${describe(rawTimeout)}`);
    timeoutMs = ms;
  }

  let onFailure: OnFailure = 'fail';
  const rawOnFailure = raw['on_failure'];
  if (rawOnFailure !== undefined) {
    if (rawOnFailure !== 'fail' && rawOnFailure !== 'ask')
      p.fail(
        `${where}: field "on_failure"`,
        `expected fail or ask, got ${describe(rawOnFailure)}`,
        'fail: the task fails; ask: the task waits for a person (atlas resume)',
      );
    onFailure = rawOnFailure;
  }

  const base = {
    name,
    ...(description !== undefined ? { description: description as string } : {}),
    ...(idempotent !== undefined ? { idempotent: idempotent as boolean } : {}),
    max_attempts: maxAttempts,
    ...(timeoutMs !== undefined ? { timeout_ms: timeoutMs } : {}),
    on_failure: onFailure,
  };

  switch (stepType) {
    case 'ai':
    case 'human': {
      const prompt = raw['prompt'];
      if (typeof prompt !== 'string' || prompt.trim().length === 0) {
        p.fail(
          `${where}: field "prompt"`,
          prompt === undefined ? 'is required' : `expected text, got ${describe(prompt)}`,
          stepType === 'ai'
            ? 'write what the agent should do; {{description}} is the task description'
            : 'write what the person is asked to approve',
        );
      }
      if (stepType === 'human') return { ...base, type: stepType, prompt };
      // Tool patterns are lists of strings, like commands (e.g. allowed_tools: ["Bash(make test)"]).
      const allowed = raw['allowed_tools'] === undefined ? [] : commandList(p, where, 'allowed_tools', raw['allowed_tools'], false);
      return { ...base, type: stepType, prompt, ...(allowed.length > 0 ? { allowed_tools: allowed } : {}) };
    }
    case 'command':
      return { ...base, type: 'command', run: commandList(p, where, 'run', raw['run'], true) };
    case 'validation':
      return { ...base, type: 'validation', commands: commandList(p, where, 'commands', raw['commands'], false) };
    case 'git': {
      const action = raw['action'];
      if (typeof action !== 'string' || !(GIT_ACTIONS as readonly string[]).includes(action)) {
        p.fail(
          `${where}: field "action"`,
          action === undefined ? 'is required' : `unknown git action ${describe(action)}`,
          `allowed: ${GIT_ACTIONS.join(', ')}`,
        );
      }
      const message = raw['message'];
      if (message !== undefined && (typeof message !== 'string' || message.trim().length === 0)) {
        p.fail(`${where}: field "message"`, `expected text, got ${describe(message)}`);
      }
      return { ...base, type: 'git', action: action as GitAction, ...(message !== undefined ? { message: message as string } : {}) };
    }
  }
}

/** The `lifecycle:` section: a mapping of points to a command or a list of commands. */
function parseLifecycle(p: Problems, raw: unknown): LifecycleCommands | undefined {
  if (raw === undefined || raw === null) return undefined;
  const allowed = `points: ${LIFECYCLE_HOOK_FIELDS.join(', ')} (docs/lifecycle-hooks.md)`;
  if (!isObj(raw))
    p.fail(
      'field "lifecycle"',
      `expected a mapping of hook points to commands, got ${describe(raw)}`,
      `for example: lifecycle: { on_stream_finish: ./scripts/notify.sh }; ${allowed}`,
    );
  const result: LifecycleCommands = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!(LIFECYCLE_HOOK_FIELDS as readonly string[]).includes(key))
      p.fail(`lifecycle: field "${key}"`, 'is not a lifecycle hook point', allowed);
    const commands = commandList(p, 'lifecycle', key, value, false);
    if (commands.length > 0) result[key as keyof LifecycleCommands] = commands;
  }
  return result;
}

/**
 * Checks parsed YAML against the template format. `file` names the source in every error;
 * `fileName` (the file's base name) is the template's name: `name`, if given, must equal it,
 * since `atlas start <name>` finds templates by file name.
 */
export function parseTemplateData(data: unknown, file: string, fileName: string): Template {
  const p: Problems = new Problems(file);
  if (!isObj(data))
    p.fail('template', `expected a mapping with steps, got ${describe(data)}`, 'see docs/templates.md for the template format');
  for (const key of Object.keys(data)) {
    if (!(TEMPLATE_FIELDS as readonly string[]).includes(key))
      p.fail(`field "${key}"`, 'is not a template field', `template fields: ${TEMPLATE_FIELDS.join(', ')}`);
  }
  const name = data['name'] ?? fileName;
  if (typeof name !== 'string' || !TEMPLATE_NAME_PATTERN.test(name)) {
    p.fail('field "name"', `expected a name of letters, digits, "-" and "_", got ${describe(name)}`);
  }
  if (name !== fileName) {
    p.fail(
      'field "name"',
      `"${name}" differs from the file name "${fileName}"; atlas finds templates by file name (atlas start ${fileName})`,
      `write name: ${fileName}, or leave name out; to call the template "${name}", rename the file to ${name}${extname(file) || '.yaml'}`,
    );
  }
  const description = data['description'] ?? '';
  if (typeof description !== 'string') p.fail('field "description"', `expected text, got ${describe(description)}`);
  const branchPrefix = data['branch_prefix'] ?? 'atlas/';
  if (typeof branchPrefix !== 'string' || !BRANCH_PREFIX_PATTERN.test(branchPrefix) || branchPrefix.includes('..')) {
    p.fail('field "branch_prefix"', `expected a branch name prefix such as fix/ or feat/, got ${describe(branchPrefix)}`);
  }
  const worktree = data['worktree'] ?? true;
  if (typeof worktree !== 'boolean')
    p.fail(
      'field "worktree"',
      `expected true or false, got ${describe(worktree)}`,
      'true: run in a new git worktree; false: run in the current checkout',
    );
  const rawSteps = data['steps'];
  if (!Array.isArray(rawSteps) || rawSteps.length === 0) {
    p.fail(
      'field "steps"',
      rawSteps === undefined ? 'is required' : `expected a non-empty list of steps, got ${describe(rawSteps)}`,
      'list the steps, each with at least name and type',
    );
  }
  const seen = new Set<string>();
  const steps = rawSteps.map((s, i) => parseStep(p, s, i, seen));
  const lifecycle = parseLifecycle(p, data['lifecycle']);
  const controlPaths = data['control_paths'] ?? [];
  if (
    !Array.isArray(controlPaths) ||
    !controlPaths.every((c) => typeof c === 'string' && c.length > 0 && !c.startsWith('/') && !c.split('/').includes('..'))
  ) {
    p.fail(
      'field "control_paths"',
      `expected a list of paths in the repository (a file, or a folder ending in /), got ${describe(controlPaths)}`,
      'e.g. control_paths: [".github/workflows/ci.yml", ".husky/"]',
    );
  }
  const allowed = controlPaths as string[];
  return {
    name,
    description,
    branch_prefix: branchPrefix,
    worktree,
    steps,
    ...(lifecycle ? { lifecycle } : {}),
    ...(allowed.length ? { control_paths: allowed } : {}),
    source: file,
  };
}

/** Parses YAML text (loads the yaml library on demand). */
export async function parseTemplateText(text: string, file: string, fileName: string): Promise<Template> {
  let parsed: ParsedYaml;
  try {
    parsed = await parseYamlText(text);
  } catch (error) {
    throw new AtlasError(`${file}: not valid YAML: ${(error as Error).message}`, {
      exitCode: EXIT.input,
      hint: 'fix the syntax at the line shown (docs/templates.md describes the format)',
      cause: error,
    });
  }
  // The library's warnings, as atlas warnings (not raw `(node:PID)` lines).
  for (const w of parsed.warnings) process.stderr.write(`atlas: warning: ${file}: ${w}\n`);
  return parseTemplateData(parsed.data, file, fileName);
}

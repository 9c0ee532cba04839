// hook.json on disk: validated on read, written atomically.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { HookFormatError, MAX_HOOK_STRING_LENGTH, parseHook, truncateLongStrings } from '../domain/hook-schema.js';
import { hookTaskMismatch } from '../domain/hook-task-check.js';
import { writeFileAtomic } from './atomic-write.js';
import { parseJsonText, readTextFile } from './json-file.js';
import { taskFiles } from './paths.js';

/**
 * The exact text of each list item as it was read, keyed by the parsed object. History is
 * append-only and atlas never mutates a parsed item, so writing a hook back reuses these lines
 * and serialises only what is new: on a 10,000-event hook that is most of a checkpoint's cost.
 */
const itemText = new WeakMap<object, string>();

const ITEM_INDENT = '    ';

/**
 * Remembers the line of each item of the list `key`, when the file has exactly the layout
 * formatHookJson writes (one item per line). Any other layout (a hand-edited or foreign file)
 * is simply not remembered, and the next write serialises everything.
 */
function rememberItemLines(text: string, key: string, items: unknown[]): void {
  if (items.length === 0) return;
  const open = `\n  ${JSON.stringify(key)}: [\n`;
  const start = text.indexOf(open);
  if (start < 0) return;
  const end = text.indexOf('\n  ]', start + open.length - 1);
  if (end < 0) return;
  const lines = text.slice(start + open.length, end).split('\n');
  if (lines.length !== items.length) return;
  const texts: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const body = i < lines.length - 1 ? line.slice(ITEM_INDENT.length, -1) : line.slice(ITEM_INDENT.length);
    if (!line.startsWith(`${ITEM_INDENT}{`) || !body.endsWith('}') || (i < lines.length - 1 && !line.endsWith(','))) return;
    // parseHook drops null optionals; such an item no longer matches its text, so re-serialise it.
    texts.push(body.includes('null') ? '' : body);
  }
  items.forEach((item, i) => {
    if (texts[i] && typeof item === 'object' && item !== null) itemText.set(item, texts[i]!);
  });
}

function hasLineLongerThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n', start);
    if ((end < 0 ? text.length : end) - start > max) return true;
    if (end < 0) return false;
    start = end + 1;
  }
}

export function readHookFile(path: string): Hook {
  const text = readTextFile(path);
  let hook: Hook;
  let cut: string[] = [];
  try {
    const data = parseJsonText(path, text);
    // A field longer than the bound needs a line at least that long (JSON strings hold no raw
    // newline), so usual hooks, even with 10,000 events, skip the walk.
    if (hasLineLongerThan(text, MAX_HOOK_STRING_LENGTH)) cut = truncateLongStrings(data);
    hook = parseHook(data);
  } catch (error) {
    if (error instanceof HookFormatError) {
      throw new AtlasError(`${path} is not a valid hook: ${error.message}`, {
        exitCode: EXIT.input,
        hint: 'fix the named field (see docs/hook-format.md), or restore the file from a backup',
        cause: error,
      });
    }
    throw error;
  }
  // A cut item no longer matches its line: everything is serialised afresh on the next write.
  if (cut.length === 0) rememberItemLines(text, 'history', hook.history);
  return hook;
}

/**
 * Refuses (exit 2, naming the field and the fix) a hook that is not this task's: another task's
 * id, or a running step that task.json does not have. Called before anything acts on the hook.
 */
export function assertHookOfTask(path: string, hook: Hook, taskId: string, steps: readonly { name: string }[] | undefined): void {
  const mismatch = hookTaskMismatch(hook, taskId, steps);
  if (!mismatch) return;
  throw new AtlasError(`${path}: ${mismatch.field} ${mismatch.problem}`, {
    exitCode: EXIT.input,
    hint: `${mismatch.fix}; nothing was changed`,
  });
}

/** readHookFile for a task folder, cross-checked with the task (its id, and task.json's steps when given). */
export function readHookOfTask(ref: { id: string; dir: string }, steps?: readonly { name: string }[]): Hook {
  const path = taskFiles(ref.dir).hook;
  const hook = readHookFile(path);
  assertHookOfTask(path, hook, ref.id, steps);
  return hook;
}

/**
 * hook.json layout: top-level fields indented as usual, and each item of a list on one line.
 * Same JSON, same shape; a 10,000-event history parses ~30% faster than fully indented JSON
 * (the file is read on every command) and stays readable line by line in diffs and greps.
 */
export function formatHookJson(hook: Hook): string {
  const entries = Object.entries(hook).filter(([, v]) => v !== undefined);
  const lines = ['{'];
  entries.forEach(([key, value], i) => {
    const comma = i < entries.length - 1 ? ',' : '';
    if (Array.isArray(value) && value.length > 0) {
      lines.push(`  ${JSON.stringify(key)}: [`);
      const last = value.length - 1;
      for (const [j, item] of value.entries())
        lines.push(`${ITEM_INDENT}${itemText.get(item) ?? JSON.stringify(item)}${j < last ? ',' : ''}`);
      lines.push(`  ]${comma}`);
    } else {
      lines.push(`  ${JSON.stringify(key)}: ${JSON.stringify(value, null, 2).replace(/\n/g, '\n  ')}${comma}`);
    }
  });
  lines.push('}', '');
  return lines.join('\n');
}

export function writeHookFile(path: string, hook: Hook): void {
  writeFileAtomic(path, formatHookJson(hook));
}

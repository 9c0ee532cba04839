// hook.json on disk: validated on read, written atomically.
import { AtlasError, EXIT } from '../domain/errors.js';
import type { Hook } from '../domain/hook.js';
import { HookFormatError, MAX_HOOK_STRING_LENGTH, parseHook, truncateLongStrings } from '../domain/hook-schema.js';
import { hookTaskMismatch } from '../domain/hook-task-check.js';
import { writeFileAtomic } from './atomic-write.js';
import { parseJsonText, readTextFile } from './json-file.js';
import { taskFiles } from './paths.js';

/**
 * The exact text of a list's items as it was read: the file's text, the parsed items, and where
 * each item's line starts and its body ends (-1: serialise it afresh). History is append-only and
 * atlas never mutates a parsed item, so writing a hook back copies runs of unchanged lines and
 * serialises only what is new: on a 10,000-event hook that is most of a checkpoint's cost. One
 * record per list, keyed by its first item (the list itself may be copied), holding offsets
 * rather than a string per item: a WeakMap entry per item made the young generation's
 * collections cost as much as the serialising they saved.
 */
interface ListLines {
  text: string;
  items: readonly unknown[];
  starts: Int32Array;
  ends: Int32Array;
}
const listLines = new WeakMap<object, ListLines>();

const ITEM_INDENT = '    ';

/**
 * Remembers the line of each item of the list `key`, when the file has exactly the layout
 * formatHookJson writes (one item per line). Any other layout (a hand-edited or foreign file)
 * is simply not remembered, and the next write serialises everything.
 */
function rememberItemLines(text: string, key: string, items: unknown[]): void {
  const first = items[0];
  if (typeof first !== 'object' || first === null) return;
  const open = `\n  ${JSON.stringify(key)}: [\n`;
  const begin = text.indexOf(open);
  if (begin < 0) return;
  const end = text.indexOf('\n  ]', begin + open.length - 1);
  if (end < 0) return;
  const starts = new Int32Array(items.length);
  const ends = new Int32Array(items.length);
  let nextNull = text.indexOf('null', begin);
  let at = begin + open.length;
  for (let i = 0; i < items.length; i++) {
    const lastLine = i === items.length - 1;
    const lineEnd = text.indexOf('\n', at);
    // Fewer or more lines than items: not this layout.
    if (lastLine ? lineEnd !== end : lineEnd < 0 || lineEnd >= end) return;
    const bodyEnd = lastLine ? lineEnd : lineEnd - 1;
    if (!text.startsWith(`${ITEM_INDENT}{`, at) || text[bodyEnd - 1] !== '}' || (!lastLine && text[bodyEnd] !== ',')) return;
    while (nextNull >= 0 && nextNull < at) nextNull = text.indexOf('null', nextNull + 1);
    // parseHook drops null optionals; such an item no longer matches its text, so re-serialise it.
    starts[i] = nextNull >= 0 && nextNull < bodyEnd ? -1 : at;
    ends[i] = bodyEnd;
    at = lineEnd + 1;
  }
  listLines.set(first, { text, items: items.slice(), starts, ends });
}

/** The lines of `items` in formatHookJson's layout, copying the remembered ones in runs. */
function itemLines(items: readonly unknown[], out: string[]): void {
  const first = items[0];
  const known = typeof first === 'object' && first !== null ? listLines.get(first) : undefined;
  const last = items.length - 1;
  for (let j = 0; j <= last; j++) {
    let end = j; // items j..end-1 are as they were read
    while (known && end <= last && end < known.items.length && known.items[end] === items[end] && known.starts[end]! >= 0) end++;
    if (known && end > j) {
      // Their lines as they were, in one slice: each but the run's last already ends with its comma.
      out.push(`${known.text.slice(known.starts[j]!, known.ends[end - 1]!)}${end - 1 < last ? ',' : ''}`);
      j = end - 1;
    } else {
      out.push(`${ITEM_INDENT}${JSON.stringify(items[j])}${j < last ? ',' : ''}`);
    }
  }
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
      itemLines(value, lines);
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

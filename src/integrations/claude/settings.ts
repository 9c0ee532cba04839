// Claude Code settings for atlas's hook: the command, the `hooks` block that registers it for
// every event, the JSON atlas passes with `--settings` when it launches Claude Code itself, and
// the text edits behind `atlas claude install` / `uninstall` (only atlas's entries are added or
// removed; every other byte of the file stays as it was).
import { CLAUDE_HOOK_EVENTS } from './event.js';
import type { MemberSpan, ValueSpan } from './json-spans.js';
import { indentAt, indentUnit, scanJson } from './json-spans.js';

/** Events whose matcher is a tool name: atlas wants every tool. */
const TOOL_EVENTS = new Set(['PreToolUse', 'PostToolUse', 'PostToolUseFailure']);
/** Seconds Claude Code waits for the hook (a lock held by a killed process can take a while). */
export const HOOK_TIMEOUT_SECONDS = 30;

/** A POSIX shell single-quoted word. */
function quote(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * `node <abs bin/claude-hook.cjs>`: absolute paths, so it runs from any directory and without
 * `atlas` on PATH; the hook's own entry, so a tool call does not pay for loading the CLI.
 */
export function hookCommand(node: string, hookScript: string): string {
  return `${quote(node)} ${quote(hookScript)}`;
}

/** Is this a hook command atlas installed (any atlas location, `bin/atlas.cjs claude-hook` or `bin/atlas.js claude-hook` too)? */
export function isAtlasHookCommand(command: unknown): boolean {
  if (typeof command !== 'string') return false;
  const text = command.trim();
  return /\/bin\/claude-hook\.cjs'?$/.test(text) || (/(?:^|\s)claude-hook$/.test(text) && /atlas/.test(text));
}

interface HookGroup {
  matcher?: string;
  hooks: { type: 'command'; command: string; timeout: number }[];
}

function groupFor(event: string, command: string): HookGroup {
  const hooks = [{ type: 'command' as const, command, timeout: HOOK_TIMEOUT_SECONDS }];
  return TOOL_EVENTS.has(event) ? { matcher: '*', hooks } : { hooks };
}

export function atlasHooks(command: string): Record<string, HookGroup[]> {
  return Object.fromEntries(CLAUDE_HOOK_EVENTS.map((e) => [e, [groupFor(e, command)]]));
}

/**
 * The `--settings` JSON for a Claude Code that atlas launches: hooks on even if the user's own
 * settings disable them, and a marker telling the hook that atlas's stream already counts tokens.
 */
export function launchSettings(command: string, env: Record<string, string> = {}): string {
  return JSON.stringify({ disableAllHooks: false, hooks: atlasHooks(command), env: { ATLAS_CLAUDE_LAUNCHED: '1', ...env } });
}

// --- install / uninstall as text edits -------------------------------------------------------

interface Edit {
  start: number;
  end: number;
  text: string;
}

function apply(text: string, edits: Edit[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

function render(value: unknown, indent: string, unit: string): string {
  return JSON.stringify(value, null, unit).replace(/\n/g, `\n${indent}`);
}

/** Text that appends `entries` (already rendered at `childIndent`) to an object or array. */
function appendTo(text: string, container: ValueSpan, count: number, entries: string[], unit: string): Edit {
  const containerIndent = indentAt(text, container.start);
  if (count === 0) {
    const childIndent = containerIndent + unit;
    return {
      start: container.start + 1,
      end: container.end - 1,
      text: `\n${entries.map((e) => childIndent + e).join(`,\n`)}\n${containerIndent}`,
    };
  }
  const last =
    container.kind === 'object'
      ? container.members[container.members.length - 1]!.span
      : container.kind === 'array'
        ? container.items[container.items.length - 1]!
        : container;
  const onOwnLine = /\n[ \t]*$/.test(text.slice(0, last.start));
  const sep = onOwnLine ? `\n${indentAt(text, last.start)}` : ' ';
  return { start: last.end, end: last.end, text: entries.map((e) => `,${sep}${e}`).join('') };
}

function childIndentOf(text: string, container: ValueSpan, count: number, unit: string): string {
  if (count > 0) {
    const first = container.kind === 'object' ? container.members[0]!.span : container.kind === 'array' ? container.items[0]! : container;
    if (/\n[ \t]*$/.test(text.slice(0, first.start))) return indentAt(text, first.start);
  }
  return indentAt(text, container.start) + unit;
}

function isOurGroup(text: string, item: ValueSpan): boolean {
  if (item.kind !== 'object') return false;
  const value = JSON.parse(text.slice(item.start, item.end)) as { hooks?: unknown };
  return (
    Array.isArray(value.hooks) &&
    value.hooks.length > 0 &&
    value.hooks.every((h) => isAtlasHookCommand((h as { command?: unknown } | null)?.command))
  );
}

function groupCommand(text: string, item: ValueSpan): string | undefined {
  const value = JSON.parse(text.slice(item.start, item.end)) as { hooks?: { command?: string }[] };
  return value.hooks?.[0]?.command;
}

export class SettingsShapeError extends Error {
  override name = 'SettingsShapeError';
}

function rootOf(text: string): Extract<ValueSpan, { kind: 'object' }> {
  JSON.parse(text); // the precise error for a broken file
  const root = scanJson(text);
  if (root.kind !== 'object') throw new SettingsShapeError('the settings file is not a JSON object');
  return root;
}

function member(obj: Extract<ValueSpan, { kind: 'object' }>, key: string): MemberSpan | undefined {
  return obj.members.find((m) => m.key === key);
}

/** The settings text with atlas's hooks added (the same text when they are already there). */
export function installHooks(text: string | undefined, command: string): string {
  const wanted = atlasHooks(command);
  if (text === undefined || text.trim().length === 0) return `${JSON.stringify({ hooks: wanted }, null, 2)}\n`;
  const root = rootOf(text);
  const unit = indentUnit(text);
  const hooks = member(root, 'hooks');
  if (!hooks) {
    const indent = childIndentOf(text, root, root.members.length, unit);
    return apply(text, [appendTo(text, root, root.members.length, [`"hooks": ${render(wanted, indent, unit)}`], unit)]);
  }
  if (hooks.value.kind !== 'object') throw new SettingsShapeError('"hooks" in the settings file is not an object');
  const obj = hooks.value;
  const edits: Edit[] = [];
  const missing: string[] = [];
  const memberIndent = childIndentOf(text, obj, obj.members.length, unit);
  for (const [event, groups] of Object.entries(wanted)) {
    const existing = member(obj, event);
    if (!existing) {
      missing.push(`${JSON.stringify(event)}: ${render(groups, memberIndent, unit)}`);
      continue;
    }
    if (existing.value.kind !== 'array') throw new SettingsShapeError(`"hooks.${event}" in the settings file is not an array`);
    const arr = existing.value;
    const ours = arr.items.filter((item) => isOurGroup(text, item));
    if (ours.some((item) => groupCommand(text, item) === command)) continue;
    if (ours.length > 0) {
      // atlas moved: point its existing entry at the new command, in place.
      for (const item of ours) edits.push({ start: item.start, end: item.end, text: render(groups[0], indentAt(text, item.start), unit) });
      continue;
    }
    const indent = childIndentOf(text, arr, arr.items.length, unit);
    edits.push(appendTo(text, arr, arr.items.length, [render(groups[0], indent, unit)], unit));
  }
  if (missing.length > 0) edits.push(appendTo(text, obj, obj.members.length, missing, unit));
  return edits.length === 0 ? text : apply(text, edits);
}

/** Removes the spans of `remove` (items of one container) with their separators. */
function removeItems(all: { start: number; end: number }[], remove: Set<number>, container: ValueSpan): Edit[] {
  const keep = all.filter((_, i) => !remove.has(i));
  if (keep.length === 0) return [{ start: container.start + 1, end: container.end - 1, text: '' }];
  const firstKept = all.findIndex((_, i) => !remove.has(i));
  // Leading removed items go with the separator after them; later ones with the one before.
  const edits: Edit[] = firstKept > 0 ? [{ start: all[0]!.start, end: all[firstKept]!.start, text: '' }] : [];
  all.forEach((span, i) => {
    if (i > firstKept && remove.has(i)) edits.push({ start: all[i - 1]!.end, end: span.end, text: '' });
  });
  return edits;
}

/** The settings text without atlas's hooks; `emptied` when nothing but an empty object is left. */
export function uninstallHooks(text: string): { text: string; emptied: boolean } {
  const root = rootOf(text);
  const hooks = member(root, 'hooks');
  if (hooks?.value.kind !== 'object') return { text, emptied: false };
  const obj = hooks.value;
  const edits: Edit[] = [];
  const dropMembers = new Set<number>();
  obj.members.forEach((m, mi) => {
    if (m.value.kind !== 'array') return;
    const arr = m.value;
    const ours = new Set(arr.items.map((item, i) => (isOurGroup(text, item) ? i : -1)).filter((i) => i >= 0));
    if (ours.size === 0) return;
    if (ours.size === arr.items.length) dropMembers.add(mi);
    else edits.push(...removeItems(arr.items, ours, arr));
  });
  if (dropMembers.size > 0) {
    if (dropMembers.size === obj.members.length) {
      // Only atlas's events were there: the whole "hooks" key goes.
      edits.push(
        ...removeItems(
          root.members.map((m) => m.span),
          new Set([root.members.indexOf(hooks)]),
          root,
        ),
      );
    } else {
      edits.push(
        ...removeItems(
          obj.members.map((m) => m.span),
          dropMembers,
          obj,
        ),
      );
    }
  }
  const out = edits.length === 0 ? text : apply(text, edits);
  const value = JSON.parse(out) as Record<string, unknown>;
  return { text: out, emptied: Object.keys(value).length === 0 };
}

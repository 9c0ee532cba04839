import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Hook } from '../src/domain/hook.js';
import { newHook, recordEvent, transition } from '../src/domain/hook.js';
import { formatHookJson, readHookFile, writeHookFile } from '../src/store/hook-file.js';
import { tempDir } from './helpers/core-fixtures.js';

function bigHook(events: number): Hook {
  let hook = newHook('task-20260101-120000', 'ws', '2026-01-01T12:00:00Z');
  for (let i = 0; i < events; i++)
    hook = recordEvent(hook, { trigger: 'note', at: '2026-01-01T12:00:01Z', details: { i, text: `event "${i}" | ✓` } });
  return hook;
}

/** What the file must hold: the hook serialised from scratch, with no remembered lines. */
const fresh = (hook: Hook) => formatHookJson(JSON.parse(JSON.stringify(hook)) as Hook);

describe('hook.json file', () => {
  it('writes one list item per line, and reads back the same hook', () => {
    const path = join(tempDir(), 'hook.json');
    const hook = bigHook(3);
    writeHookFile(path, hook);
    const text = readFileSync(path, 'utf8');
    expect(text.split('\n').filter((l) => l.startsWith('    {"timestamp"'))).toHaveLength(4);
    expect(readHookFile(path)).toEqual(JSON.parse(JSON.stringify(hook)));
  });

  it('a read-modify-write reuses unchanged lines and writes exactly what a fresh write would', () => {
    const path = join(tempDir(), 'hook.json');
    writeHookFile(path, bigHook(500));
    const read = readHookFile(path);
    const next = transition(read, { to: 'step_pending', trigger: 'setup_complete', at: '2026-01-01T12:00:02Z' });
    writeHookFile(path, next);
    expect(readFileSync(path, 'utf8')).toBe(fresh(next));
    expect(readHookFile(path).history).toHaveLength(502);
  });

  it('a hand-edited or foreign layout is read and rewritten correctly', () => {
    const path = join(tempDir(), 'hook.json');
    const hook = bigHook(5);
    writeFileSync(path, JSON.stringify(hook, null, 4)); // fully indented, as another tool might write
    const read = readHookFile(path);
    writeHookFile(path, recordEvent(read, { trigger: 'x', at: '2026-01-01T12:00:03Z' }));
    expect(readHookFile(path).history.map((e) => e.trigger)).toEqual([...hook.history.map((e) => e.trigger), 'x']);
    // two items edited onto one line: lines no longer match items, nothing is reused wrongly
    const lines = readFileSync(path, 'utf8').split('\n');
    const i = lines.findIndex((l) => l.includes('"i":1'));
    lines.splice(i, 2, `${lines[i]} ${lines[i + 1]!.trim()}`);
    writeFileSync(path, lines.join('\n'));
    const again = readHookFile(path);
    writeHookFile(path, again);
    expect(readFileSync(path, 'utf8')).toBe(fresh(again));
  });

  it('items whose nulls were normalised away are written without them', () => {
    const path = join(tempDir(), 'hook.json');
    writeHookFile(path, bigHook(2));
    writeFileSync(path, readFileSync(path, 'utf8').replace(/"details":\{[^}]*\}/, '"step_name":null,"details":null'));
    const read = readHookFile(path);
    expect(read.history[1]!.details).toBeUndefined();
    writeHookFile(path, read);
    expect(readFileSync(path, 'utf8')).not.toContain('null');
    expect(readFileSync(path, 'utf8')).toBe(fresh(read));
  });
});

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

  it('other layouts of the list (compact, closed on its last line, indented otherwise, an item over two lines) are rewritten as a fresh write would', () => {
    const path = join(tempDir(), 'hook.json');
    writeHookFile(path, bigHook(3));
    const ours = readFileSync(path, 'utf8');
    const layouts = [
      JSON.stringify(JSON.parse(ours)), // one line
      ours.replace(/\}\n {2}\]/, '}]'), // the list closed on its last item's line
      ours.replace(/\n {4}\{"timestamp"/g, '\n      {"timestamp"'), // items indented by six
      ours.replace('}}\n  ]', '}\n      }\n  ]'), // the last item spread over two lines, split after a brace
    ];
    expect(layouts.every((l) => l !== ours)).toBe(true); // each replacement found its text
    for (const layout of layouts) {
      writeFileSync(path, layout);
      const read = readHookFile(path);
      const next = recordEvent(read, { trigger: 'x', at: '2026-01-01T12:00:03Z' });
      writeHookFile(path, next);
      expect(readFileSync(path, 'utf8')).toBe(fresh(next));
    }
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

  it('copies runs of unchanged lines around replaced, removed, added and null-normalised items, exactly as a fresh write', () => {
    const path = join(tempDir(), 'hook.json');
    writeHookFile(path, bigHook(8));
    // item 4 carries a null that parseHook drops: its line cannot be reused
    writeFileSync(path, readFileSync(path, 'utf8').replace('"details":{"i":3,', '"step_name":null,"details":{"i":3,'));
    const read = readHookFile(path);
    const h = read.history;
    const variants: Hook[] = [
      read, // unchanged
      { ...read, history: [...h.slice(0, -1), { ...h.at(-1)!, details: { replaced: true } }] }, // the last replaced (run-step.ts)
      { ...read, history: [...h.slice(0, 2), { ...h[2]!, trigger: 'edited' }, ...h.slice(3)] }, // one in the middle
      { ...read, history: h.slice(3) }, // the first ones removed
      { ...read, history: [h[0]!, ...h.slice(2)] }, // one removed after the first
      recordEvent(read, { trigger: 'added', at: '2026-01-01T12:00:09Z' }), // appended
      { ...read, history: [h[0]!] }, // only the first
    ];
    for (const hook of variants) {
      writeHookFile(path, hook);
      expect(readFileSync(path, 'utf8')).toBe(fresh(hook));
    }
  });
});
